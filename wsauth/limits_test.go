package wsauth

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// TestSubscriptionLimit: a Sub for a new subscription over the effective
// limit is answered Error/Limited and not forwarded; a re-Sub of one held
// is not limited, and an Unsub makes room.
func TestSubscriptionLimit(t *testing.T) {
	sub0 := len(subMsg("Market", "Security!S0", 0))
	for _, tt := range []struct {
		name  string
		mod   func(*Config)
		limit int
	}{
		{"config limit", func(c *Config) { c.Limits.Default.Subscriptions = 2 }, 2},
		{"override by client", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "demo-app", Limits: policy.Limits{Subscriptions: 3}}}
		}, 3},
		{"override by scope", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{Scope: policy.ScopeNews, Limits: policy.Limits{Subscriptions: 4}}, {Scope: policy.ScopeTrading, Limits: policy.Limits{Subscriptions: 9}}}
		}, 4},
		{"override for another client", func(c *Config) {
			c.Limits.Default.Subscriptions = 2
			c.Limits.Overrides = []policy.LimitOverride{{ClientID: "other-app", Limits: policy.Limits{Subscriptions: 5}}}
		}, 2},
		{"bytes kept", func(c *Config) { c.Limits.MaxSubscriptionBytes = int64(3*sub0 - 1) }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, tt.mod)
			c := e.dial(bearer(tokDemo))
			for i := range tt.limit {
				subscribe(t, c, "Market", "Security!S"+strconv.Itoa(i), i)
			}
			over := "Security!S" + strconv.Itoa(tt.limit)
			if got, want := roundTrip(t, c, subMsg("Market", over, 99)), errorMsg("Market", over, 99, CodeLimited); got != want {
				t.Fatalf("Sub over the limit:\n got %s\nwant %s", got, want)
			}
			if n := e.backend.countExact(subMsg("Market", over, 99)); n != 0 {
				t.Fatal("the Sub over the limit reached the backend")
			}
			subscribe(t, c, "Market", "Security!S0", 0) // held: not limited
			if got, want := roundTrip(t, c, unsubMsg("Market", "Security!S0", 0)), `{"Controller":"Market","Topic":"Security!S0","Action":"Unsub","TransactionID":0,"Confirm":true}`; got != want {
				t.Fatalf("Unsub: %s", got)
			}
			subscribe(t, c, "Market", over, 99)
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.limited[LimitSubscriptions] }); n != 1 {
				t.Fatalf("limited counted %d", n)
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); n != tt.limit {
				t.Fatalf("subscriptions gauge %d, want %d", n, tt.limit)
			}
		})
	}
}

// TestRequireTLS: on a connection that is not secure, require_tls
// withholds Trading and OrderPad from every identity the session takes,
// before the policy, the Identify replies and the backend headers.
func TestRequireTLS(t *testing.T) {
	secure := func(*http.Request) bool { return true }
	for _, tt := range []struct {
		name     string
		require  bool
		secure   func(*http.Request) bool
		auth     string // header, token, owner
		withheld bool
	}{
		{"plain, header auth", true, nil, "header", true},
		{"plain, AuthToken", true, nil, "token", true},
		{"plain, AuthOwner", true, nil, "owner", true},
		{"secure by the hook", true, secure, "header", false},
		{"secure by the hook, AuthToken", true, secure, "token", false},
		{"not required", false, nil, "header", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, func(c *Config) {
				c.Auth.RequireTLS, c.Hooks.Secure, c.Hooks.Passwords = tt.require, tt.secure, fakePasswords{}
			})
			var c *websocket.Conn
			owner := `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":1,"Data":{"ClientID":"demo-app","Username":"trader","Password":"trader"}}`
			switch tt.auth {
			case "header":
				c = e.dial(bearer(tokTrader))
			case "token":
				c = dialAuthenticated(t, e, tokTrader, false)
			case "owner":
				c = e.dial(nil)
				if got := roundTrip(t, c, owner); !strings.Contains(got, `"Result":"Success"`) {
					t.Fatalf("AuthOwner: %s", got)
				}
			}
			check := func(when string) {
				t.Helper()
				got := roundTrip(t, c, queryIdentify)
				if has := strings.Contains(got, "Service.Trading"); has == tt.withheld {
					t.Fatalf("%s: Trading in the identity %v: %s", when, has, got)
				}
				for _, topic := range []string{"QueryAccounts", "PlaceOrder"} {
					msg := `{"Controller":"Trading","Topic":"` + topic + `","TransactionID":5}`
					before := e.backend.countExact(msg)
					if tt.withheld {
						if got := roundTrip(t, c, msg); got != errorMsg("Trading", topic, 5, zenith.CodeAuthority) {
							t.Fatalf("%s: %s: %s", when, topic, got)
						}
						continue
					}
					if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
						t.Fatal(err)
					}
					eventually(t, when+": "+topic+" forwarded", func() bool { return e.backend.countExact(msg) == before+1 })
				}
			}
			check("first")
			e.backend.mu.Lock()
			scopes := e.backend.headers[0].Get("X-Scopes")
			e.backend.mu.Unlock()
			if has := strings.Contains(scopes, policy.ScopeTrading) || strings.Contains(scopes, policy.ScopeOrderPad); has == tt.withheld {
				t.Fatalf("backend X-Scopes %q", scopes)
			}
			again := authToken("Bearer", tokTrader)
			if tt.auth == "owner" {
				again = owner
			}
			if got := roundTrip(t, c, again); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("re-authentication: %s", got)
			}
			check("after a re-authentication")
		})
	}
}

// TestSubBurstKeepsTheBackendWithinTheLimit: Hundreds of Sub/Unsub
// (duplicates, Unsubs of topics never held, re-Subs) pipelined in a few TCP
// writes never let the backend hold more subscriptions than the limit, and
// the gateway's count equals what the backend holds at the end.
func TestSubBurstKeepsTheBackendWithinTheLimit(t *testing.T) {
	const limit = 5
	e := newTestEnv(t, func(c *Config) {
		c.Limits.Default = policy.Limits{Subscriptions: limit, MessagesPerSecond: 1e6, Burst: 1 << 20}
	})
	c := e.dial(bearer(tokDemo))
	rng := rand.New(rand.NewPCG(1, 2))
	tid := 1000
	for round := range 8 {
		var msgs []string
		for range 200 {
			topic := "Security!T" + strconv.Itoa(rng.IntN(12))
			tid++
			if rng.IntN(3) == 0 {
				msgs = append(msgs, unsubMsg("Market", topic, tid))
			} else {
				msgs = append(msgs, subMsg("Market", topic, tid))
			}
		}
		marker := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(round) + `}`
		msgs = append(msgs, marker)
		writePipelined(t, c, msgs...)
		readUntil(t, c, marker)
	}
	maxHeld, held := backendSubs(e.backend.received())
	if maxHeld > limit {
		t.Fatalf("the backend held %d subscriptions at once, limit %d", maxHeld, limit)
	}
	s := onlySession(t, e)
	s.mu.Lock()
	n := len(s.subs.msgs)
	s.mu.Unlock()
	gauge := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] })
	if n != len(held) || gauge != len(held) {
		t.Fatalf("gateway tracks %d (gauge %d), backend holds %d", n, gauge, len(held))
	}
}
