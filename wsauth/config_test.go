package wsauth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Backend: Backend{Upstreams: []string{"ws://127.0.0.1:9090/ws"}}, Hooks: Hooks{Verifier: &fakeVerifier{}}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	// A withheld scope a limit override names counts as one a rule
	// requires: withholding it lowers the limits without TLS.
	byLimit := good
	byLimit.Auth.RequireTLS, byLimit.Auth.WithheldScopes = true, []string{"Service/Bulk"}
	byLimit.Limits.Overrides = []policy.LimitOverride{{Scope: "Service/Bulk", Limits: policy.Limits{Subscriptions: 5000}}}
	if err := byLimit.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string // in the error
	}{
		{"no upstream", func(c *Config) { c.Backend.Upstreams = nil }, "no upstream"},
		{"http upstream", func(c *Config) { c.Backend.Upstreams = []string{"http://127.0.0.1:9090"} }, "scheme must be ws or wss"},
		{"upstream with version", func(c *Config) { c.Backend.Upstreams = []string{"ws://h/ws?version=1"} }, "may not hold one"},
		{"no verifier", func(c *Config) { c.Hooks.Verifier = nil }, "no verifier"},
		{"negative limit", func(c *Config) { c.Transport.MaxMessageBytes = -1 }, "negative"},
		{"idle under ping", func(c *Config) { c.Transport.PingInterval, c.Transport.IdleTimeout = time.Minute, time.Second }, "must exceed ping_interval"},
		{"bad origin", func(c *Config) { c.Transport.AllowedOrigins = []string{"app.example"} }, "origin"},
		{"bad sub-protocol", func(c *Config) { c.Transport.Subprotocols = []string{"a b"} }, "is not a token"},
		{"negative subscriptions", func(c *Config) { c.Limits.Default.Subscriptions = -1 }, "subscriptions is negative"},
		{"negative rate", func(c *Config) { c.Limits.Default.MessagesPerSecond = -1 }, "messages_per_second is negative"},
		{"rate not a number", func(c *Config) { c.Limits.Default.MessagesPerSecond = math.NaN() }, "not finite"},
		{"negative burst", func(c *Config) { c.Limits.Default.Burst = -1 }, "burst is negative"},
		{"negative sessions", func(c *Config) { c.Limits.Default.Sessions = -1 }, "sessions is negative"},
		{"negative override", func(c *Config) {
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{Burst: -1}}}
		}, "burst is negative"},
		{"override matching nothing", func(c *Config) { c.Limits.Overrides = []policy.LimitOverride{{Limits: policy.Limits{Burst: 1000}}} }, "exactly one of client_id and scope"},
		{"override by client and scope", func(c *Config) {
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "a", Scope: policy.ScopeMarket, Limits: policy.Limits{Burst: 1000}}}
		}, "exactly one of client_id and scope"},
		{"override below the default", func(c *Config) {
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{MessagesPerSecond: 1}}}
		}, "messages_per_second 1 is not above the default 50"},
		{"override at the default", func(c *Config) {
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{Subscriptions: 1000, Burst: policy.DefaultBurst}}}
		}, "burst 100 is not above the default 100"},
		{"negative subscription bytes", func(c *Config) { c.Limits.MaxSubscriptionBytes = -1 }, "max_subscription_bytes is negative"},
		{"negative recheck interval", func(c *Config) { c.Live.RecheckInterval = -time.Second }, "recheck_interval is negative"},
		{"negative expiry grace", func(c *Config) { c.Live.ExpiryGrace = -time.Second }, "expiry_grace is negative"},
		{"negative supervise interval", func(c *Config) { c.Live.SuperviseInterval = -time.Second }, "supervise_interval is negative"},
		{"unknown transaction_ids", func(c *Config) { c.Backend.TransactionIDs = "int64" }, "transaction_ids"},
		{"empty withheld scope", func(c *Config) { c.Auth.RequireTLS, c.Auth.WithheldScopes = true, []string{""} }, "is empty or holds a space"},
		{"withheld scopes without require_tls", func(c *Config) { c.Auth.WithheldScopes = []string{policy.ScopeTrading} }, "without require_tls"},
		{"withheld scope no rule requires", func(c *Config) { c.Auth.RequireTLS, c.Auth.WithheldScopes = true, []string{"Trading"} }, "likely misspelling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Backend.Upstreams = append([]string(nil), good.Backend.Upstreams...)
			tt.mod(&c)
			before := c
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if c.Transport.MaxMessageBytes != before.Transport.MaxMessageBytes || c.Policy != before.Policy {
				t.Fatal("Validate changed the config")
			}
		})
	}
}

// TestConfigGroupsValidateAlone: each group of a Config checks its own
// knobs with nothing else of the Config around it, its zero value valid
// but where a knob is required (an upstream, a verifier).
func TestConfigGroupsValidateAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    interface{ Validate() error }
		want string // "" for valid
	}{
		{"zero backend", &Backend{}, "no upstream"},
		{"backend", &Backend{Upstreams: []string{"ws://127.0.0.1:9090/ws"}}, ""},
		{"backend timeout", &Backend{Upstreams: []string{"ws://h/"}, MessageTimeout: -1}, "backend_message_timeout is negative"},
		{"zero transport", &Transport{}, ""},
		{"transport idle under ping", &Transport{PingInterval: time.Minute, IdleTimeout: time.Second}, "must exceed ping_interval"},
		{"zero auth", &Auth{}, ""},
		{"auth withheld without tls", &Auth{WithheldScopes: []string{policy.ScopeTrading}}, "without require_tls"},
		{"zero live", &Live{}, ""},
		{"live grace", &Live{ExpiryGrace: -time.Second}, "expiry_grace is negative"},
		{"zero limits", &Limits{}, ""},
		{"limits bytes", &Limits{MaxSubscriptionBytes: -1}, "max_subscription_bytes is negative"},
		{"zero hooks", &Hooks{}, "no verifier"},
		{"hooks", &Hooks{Verifier: &fakeVerifier{}}, ""},
	} {
		err := tc.v.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
