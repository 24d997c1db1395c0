package wsauth

import (
	"math"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Upstreams: []string{"ws://127.0.0.1:9090/ws"}, Verifier: &fakeVerifier{}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no upstream", func(c *Config) { c.Upstreams = nil }},
		{"http upstream", func(c *Config) { c.Upstreams = []string{"http://127.0.0.1:9090"} }},
		{"upstream with version", func(c *Config) { c.Upstreams = []string{"ws://h/ws?version=1"} }},
		{"no verifier", func(c *Config) { c.Verifier = nil }},
		{"negative limit", func(c *Config) { c.MaxMessageBytes = -1 }},
		{"idle under ping", func(c *Config) { c.PingInterval, c.IdleTimeout = time.Minute, time.Second }},
		{"bad origin", func(c *Config) { c.AllowedOrigins = []string{"app.example"} }},
		{"bad sub-protocol", func(c *Config) { c.Subprotocols = []string{"a b"} }},
		{"negative subscriptions", func(c *Config) { c.Limits.Subscriptions = -1 }},
		{"negative rate", func(c *Config) { c.Limits.MessagesPerSecond = -1 }},
		{"rate not a number", func(c *Config) { c.Limits.MessagesPerSecond = math.NaN() }},
		{"negative burst", func(c *Config) { c.Limits.Burst = -1 }},
		{"negative override", func(c *Config) {
			c.LimitOverrides = []LimitOverride{{ClientID: "a", Limits: Limits{Burst: -1}}}
		}},
		{"override below the default", func(c *Config) {
			c.LimitOverrides = []LimitOverride{{ClientID: "a", Limits: Limits{MessagesPerSecond: 1}}}
		}},
		{"override at the default", func(c *Config) {
			c.LimitOverrides = []LimitOverride{{ClientID: "a", Limits: Limits{Subscriptions: 1000, Burst: DefaultBurst}}}
		}},
		{"override matching nothing", func(c *Config) { c.LimitOverrides = []LimitOverride{{Limits: Limits{Burst: 1}}} }},
		{"override by client and scope", func(c *Config) {
			c.LimitOverrides = []LimitOverride{{ClientID: "a", Scope: ScopeMarket, Limits: Limits{Burst: 1}}}
		}},
		{"negative subscription bytes", func(c *Config) { c.MaxSubscriptionBytes = -1 }},
		{"negative recheck interval", func(c *Config) { c.RecheckInterval = -time.Second }},
		{"negative expiry grace", func(c *Config) { c.ExpiryGrace = -time.Second }},
		{"negative supervise interval", func(c *Config) { c.SuperviseInterval = -time.Second }},
		{"unknown transaction_ids", func(c *Config) { c.TransactionIDs = "int64" }},
		{"empty withheld scope", func(c *Config) { c.WithheldScopes = []string{""} }},
		{"withheld scopes without require_tls", func(c *Config) { c.WithheldScopes = []string{ScopeTrading} }},
		{"withheld scope no rule requires", func(c *Config) { c.RequireTLS, c.WithheldScopes = true, []string{"Trading"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Upstreams = append([]string(nil), good.Upstreams...)
			tt.mod(&c)
			before := c
			if err := c.Validate(); err == nil {
				t.Fatal("accepted")
			}
			if c.MaxMessageBytes != before.MaxMessageBytes || c.Policy != before.Policy {
				t.Fatal("Validate changed the config")
			}
		})
	}
}
