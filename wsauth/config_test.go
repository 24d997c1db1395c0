package wsauth

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Upstreams: []string{"ws://127.0.0.1:9090/ws"}, Verifier: &fakeVerifier{}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	// A withheld scope a limit override names counts as one a rule
	// requires: withholding it lowers the limits without TLS.
	byLimit := good
	byLimit.RequireTLS, byLimit.WithheldScopes = true, []string{"Service/Bulk"}
	byLimit.LimitOverrides = []policy.LimitOverride{{Scope: "Service/Bulk", Limits: policy.Limits{Subscriptions: 5000}}}
	if err := byLimit.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want string // in the error
	}{
		{"no upstream", func(c *Config) { c.Upstreams = nil }, "no upstream"},
		{"http upstream", func(c *Config) { c.Upstreams = []string{"http://127.0.0.1:9090"} }, "scheme must be ws or wss"},
		{"upstream with version", func(c *Config) { c.Upstreams = []string{"ws://h/ws?version=1"} }, "may not hold one"},
		{"no verifier", func(c *Config) { c.Verifier = nil }, "no verifier"},
		{"negative limit", func(c *Config) { c.MaxMessageBytes = -1 }, "negative"},
		{"idle under ping", func(c *Config) { c.PingInterval, c.IdleTimeout = time.Minute, time.Second }, "must exceed ping_interval"},
		{"bad origin", func(c *Config) { c.AllowedOrigins = []string{"app.example"} }, "origin"},
		{"bad sub-protocol", func(c *Config) { c.Subprotocols = []string{"a b"} }, "is not a token"},
		{"negative subscriptions", func(c *Config) { c.Limits.Subscriptions = -1 }, "subscriptions is negative"},
		{"negative rate", func(c *Config) { c.Limits.MessagesPerSecond = -1 }, "messages_per_second is negative"},
		{"rate not a number", func(c *Config) { c.Limits.MessagesPerSecond = math.NaN() }, "not finite"},
		{"negative burst", func(c *Config) { c.Limits.Burst = -1 }, "burst is negative"},
		{"negative sessions", func(c *Config) { c.Limits.Sessions = -1 }, "sessions is negative"},
		{"negative override", func(c *Config) {
			c.LimitOverrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{Burst: -1}}}
		}, "burst is negative"},
		{"override matching nothing", func(c *Config) { c.LimitOverrides = []policy.LimitOverride{{Limits: policy.Limits{Burst: 1000}}} }, "exactly one of client_id and scope"},
		{"override by client and scope", func(c *Config) {
			c.LimitOverrides = []policy.LimitOverride{{ClientID: "a", Scope: policy.ScopeMarket, Limits: policy.Limits{Burst: 1000}}}
		}, "exactly one of client_id and scope"},
		{"override below the default", func(c *Config) {
			c.LimitOverrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{MessagesPerSecond: 1}}}
		}, "messages_per_second 1 is not above the default 50"},
		{"override at the default", func(c *Config) {
			c.LimitOverrides = []policy.LimitOverride{{ClientID: "a", Limits: policy.Limits{Subscriptions: 1000, Burst: policy.DefaultBurst}}}
		}, "burst 100 is not above the default 100"},
		{"negative subscription bytes", func(c *Config) { c.MaxSubscriptionBytes = -1 }, "max_subscription_bytes is negative"},
		{"negative recheck interval", func(c *Config) { c.RecheckInterval = -time.Second }, "recheck_interval is negative"},
		{"negative expiry grace", func(c *Config) { c.ExpiryGrace = -time.Second }, "expiry_grace is negative"},
		{"negative supervise interval", func(c *Config) { c.SuperviseInterval = -time.Second }, "supervise_interval is negative"},
		{"unknown transaction_ids", func(c *Config) { c.TransactionIDs = "int64" }, "transaction_ids"},
		{"empty withheld scope", func(c *Config) { c.RequireTLS, c.WithheldScopes = true, []string{""} }, "is empty or holds a space"},
		{"withheld scopes without require_tls", func(c *Config) { c.WithheldScopes = []string{policy.ScopeTrading} }, "without require_tls"},
		{"withheld scope no rule requires", func(c *Config) { c.RequireTLS, c.WithheldScopes = true, []string{"Trading"} }, "likely misspelling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Upstreams = append([]string(nil), good.Upstreams...)
			tt.mod(&c)
			before := c
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if c.MaxMessageBytes != before.MaxMessageBytes || c.Policy != before.Policy {
				t.Fatal("Validate changed the config")
			}
		})
	}
}
