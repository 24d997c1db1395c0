package wsauth

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/audit/audittest"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

var sessionAttr = regexp.MustCompile(`session=([0-9a-f]{16}) `)

// withoutSessions checks that records name one session each socket (16
// hex digits; sockets in order of first appearance) and writes it S1,
// S2, ….
func withoutSessions(t *testing.T, recs []string) []string {
	t.Helper()
	ids := map[string]string{}
	out := make([]string, len(recs))
	for i, r := range recs {
		m := sessionAttr.FindStringSubmatch(r)
		if m == nil {
			t.Errorf("record without a session: %s", r)
			out[i] = r
			continue
		}
		if ids[m[1]] == "" {
			ids[m[1]] = fmt.Sprintf("S%d", len(ids)+1)
		}
		out[i] = strings.Replace(r, m[0], "session="+ids[m[1]]+" ", 1)
	}
	return out
}

// sortedFields writes each record of want with its attributes sorted, as
// formatRecord does.
func sortedFields(want []string) []string {
	out := make([]string, len(want))
	for i, w := range want {
		f := strings.Fields(w)
		slices.Sort(f[1:])
		out[i] = strings.Join(f, " ")
	}
	return out
}

// auditEnv is venueEnv (or newLiveEnv, without venues) recording to a
// fakeAuditor.
func auditEnv(t *testing.T, venues bool) (*testEnv, *testClock, *audittest.Recorder) {
	a := &audittest.Recorder{}
	var clock *testClock
	mod := func(c *Config) { c.Hooks.Audit, c.Hooks.Passwords = a, fakePasswords{} }
	var e *testEnv
	if venues {
		e = venueEnv(t, mod, func(c *Config) { clock = newTestClock(testNow); c.Hooks.Now = clock.now })
	} else {
		e, clock = newLiveEnv(t, mod)
	}
	return e, clock, a
}

// The secrets of the audit tests: none may reach a record.
const (
	auditPassword     = "s3cret-password"
	auditClientSecret = "s3cret-client"
)

var (
	tokASXNZX    = entToken("ASX:quotes NZX:quotes")
	tokASX       = entToken("ASX:quotes", "fresh")
	tokNewsOnly  = madeUpToken("u-trader", []string{policy.ScopeNews}, 24*time.Hour, "ent=ASX:quotes")
	auditSecrets = []string{tokDemo, tokTrader, tokASXNZX, tokASX, tokNewsOnly, auditPassword, auditClientSecret, "trader-pw"}
)

const (
	trader   = "client_id=demo-app session=S1 sub=u-trader transport=socket"
	socketS1 = "session=S1 transport=socket"
)

// TestAuditRecordsEachEvent: what each action on a socket records, with
// its exact attributes: authentications, re-authentications, lapses, a
// narrowing, every subscription's start and end with its venue and feed
// and why it ended, denials, an order message; and no record holds a
// token, secret or password. It failed when a lapse left its
// subscriptions' ends unrecorded (the usage would count a lapsed
// session's minutes), when a re-authentication after a lapse recorded
// no new start, and when the venue was left out of a subscription's end.
func TestAuditRecordsEachEvent(t *testing.T) {
	ok := "authentication " + trader + " method=header outcome=ok"
	startBHP := "subscription_start controller=Market " + trader + " feed=quotes topic=Security!BHP.ASX venue=ASX"
	startAIR := "subscription_start controller=Market " + trader + " feed=quotes topic=Security!AIR.NZX venue=NZX"
	end := func(start, reason string) string {
		return strings.Replace(strings.Replace(start, "subscription_start", "subscription_end", 1), " topic=", " reason="+reason+" topic=", 1)
	}
	tests := []struct {
		name   string
		venues bool
		run    func(t *testing.T, e *testEnv, clock *testClock)
		want   []string
	}{
		{"header, Sub, Unsub", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			roundTrip(t, c, unsubMsg("Market", "Security!BHP.ASX", 2))
		}, []string{ok, startBHP, end(startBHP, "unsub")}},
		{"session end", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			c.Close()
		}, []string{ok, startBHP, end(startBHP, "session_end")}},
		{"header refused", true, func(t *testing.T, e *testEnv, _ *testClock) {
			if _, resp, err := e.tryDial(bearer("not-a-token"), nil); err == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a refused token's upgrade: %v", err)
			}
		}, []string{"authentication method=header outcome=reject reason=bad_signature " + socketS1}},
		{"AuthToken and AuthOwner", false, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(nil)
			owner := `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":9,"Data":{"ClientID":"demo-app","ClientSecret":"` +
				auditClientSecret + `","Username":"trader","Password":"` + auditPassword + `"}}`
			roundTrip(t, c, owner)
			roundTrip(t, c, authToken("Bearer", tokDemo))
		}, []string{"authentication method=auth_owner outcome=reject reason=invalid_grant " + socketS1,
			"authentication client_id=demo-app method=auth_token outcome=ok session=S1 sub=u-demo transport=socket"}},
		{"denials", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(nil)
			roundTrip(t, c, subMsg("Market", "Security!BHP.ASX", 1))
			roundTrip(t, c, authToken("Bearer", tokASX))
			roundTrip(t, c, subMsg("Market", "Security!AIR.NZX", 2))
			roundTrip(t, c, subMsg("Trading", "PlaceOrder", 3))
		}, []string{"denial controller=Market reason=unauthenticated " + socketS1 + " topic=Security!BHP.ASX transaction_id=1",
			"authentication " + trader + " method=auth_token outcome=ok",
			"denial controller=Market " + trader + " feed=quotes reason=entitlement topic=Security!AIR.NZX transaction_id=2 venue=NZX",
			"denial controller=Trading " + trader + " reason=policy topic=PlaceOrder transaction_id=3"}},
		{"expiry, then a fresh token", true, func(t *testing.T, e *testEnv, clock *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			clock.set(testExpiry.Add(25 * time.Hour))
			eventually(t, "the lapse", func() bool { return e.lapses(LapseExpired) == 1 })
			clock.set(testNow)
			c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tokASX)))
			readUntil(t, c, snapshot("Market", "Security!BHP.ASX", 1))
		}, []string{ok, startBHP, end(startBHP, "lapse"), "lapse " + trader + " reason=expired",
			startBHP, "reauthentication " + trader + " ended=0 method=auth_token outcome=ok resubscribed=1 was_lapsed=true"}},
		{"revocation", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			e.ver.refuse(tokASXNZX, &Refusal{Reason: "revoked"})
			eventually(t, "the lapse", func() bool { return e.lapses(LapseRevoked) == 1 })
		}, []string{ok, startBHP, end(startBHP, "lapse"), "lapse " + trader + " reason=revoked refusal=revoked"}},
		{"narrowed", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			subscribe(t, c, "Market", "Security!AIR.NZX", 2)
			e.ver.narrowTo(tokASXNZX, entitle.MustParse("ASX:quotes"))
			readN(t, c, 2)
		}, []string{ok, startBHP, startAIR, "revocation " + trader + " entitlements=[ASX:quotes] removed=[NZX:quotes]",
			end(startAIR, "entitlement")}},
		{"fresh tokens with less", true, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokASXNZX))
			subscribe(t, c, "Market", "Security!BHP.ASX", 1)
			subscribe(t, c, "Market", "Security!AIR.NZX", 2)
			c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tokASX)))
			readN(t, c, 3)
			c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tokNewsOnly)))
			readN(t, c, 3)
		}, []string{ok, startBHP, startAIR, end(startAIR, "entitlement"),
			"reauthentication " + trader + " ended=1 method=auth_token outcome=ok resubscribed=0 was_lapsed=false",
			end(startBHP, "scope"),
			"reauthentication " + trader + " ended=1 method=auth_token outcome=ok resubscribed=0 was_lapsed=false"}},
		{"order", false, func(t *testing.T, e *testEnv, _ *testClock) {
			c := e.dial(bearer(tokTrader))
			writePipelined(t, c, `{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":7,"Data":{"Account":"A1","Volume":100}}`, echoMarker)
			readUntil(t, c, echoMarker)
		}, []string{"authentication client_id=demo-app method=header outcome=ok session=S1 sub=u-trader transport=socket",
			"order client_id=demo-app controller=Trading scope=Service/OrderPad session=S1 sub=u-trader topic=PlaceOrder transaction_id=7 transport=socket"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clock, a := auditEnv(t, tt.venues)
			tt.run(t, e, clock)
			eventually(t, "the records", func() bool { return len(a.Records()) >= len(tt.want) })
			time.Sleep(3 * testTick) // nothing more comes
			got, want := withoutSessions(t, a.Records()), sortedFields(tt.want)
			if !slices.Equal(got, want) {
				t.Errorf("records:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
			noSecretRecorded(t, got)
		})
	}
}

// noSecretRecorded fails when a record holds one of the tests' secrets.
func noSecretRecorded(t *testing.T, recs []string) {
	t.Helper()
	for _, r := range recs {
		for _, s := range auditSecrets {
			if strings.Contains(r, s) {
				t.Errorf("a record holds the secret %q: %s", s, r)
			}
		}
	}
}

// TestAuditNothingPerRelayedMessage: a relay of 10,000 backend messages,
// and 100 client messages forwarded, record nothing: the audit writes per
// session and subscription change. It failed when every forward of a
// Trading-controller message was recorded as an order.
func TestAuditNothingPerRelayedMessage(t *testing.T) {
	a := &audittest.Recorder{}
	e, _ := newLiveEnv(t, func(c *Config) {
		c.Hooks.Audit, c.Transport.SendQueue = a, 1024
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e9, Burst: 1 << 30, Subscriptions: 10}
	})
	c := e.dial(bearer(tokTrader))
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	before := len(a.Records())
	c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Blast","Data":10000}`))
	for range 10000 {
		readMsg(t, c)
	}
	var msgs []string
	for i := range 100 {
		msgs = append(msgs, fmt.Sprintf(`{"Controller":"Trading","Topic":"QueryOrders","TransactionID":%d}`, 100+i))
	}
	writePipelined(t, c, append(msgs, echoMarker)...)
	readUntil(t, c, echoMarker)
	if got := a.Records(); len(got) != before || before != 2 {
		t.Errorf("%d records before the relay (want 2), %d after:\n%s", before, len(got), strings.Join(got, "\n"))
	}
}

// TestAuditRefusing: while the auditor refuses, an upgrade gets 503 and
// an Auth message on a socket not yet authenticated closes it with 1013;
// an authenticated session goes on, and may re-authenticate. It failed
// when the upgrade ignored Refusing.
func TestAuditRefusing(t *testing.T) {
	e, _, a := auditEnv(t, false)
	live := e.dial(bearer(tokDemo))
	waiting := e.dial(nil)
	a.Refuse(true)
	if _, resp, err := e.tryDial(bearer(tokDemo), nil); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an upgrade while the audit refuses: %v", err)
	}
	waiting.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tokDemo)))
	if code := closeCode(t, waiting); code != websocket.CloseTryAgainLater {
		t.Errorf("an AuthToken on a waiting socket while the audit refuses closed it with %d, want 1013", code)
	}
	if got := roundTrip(t, live, authToken("Bearer", tokDemo)); !strings.Contains(got, `"UserID":"u-demo"`) {
		t.Errorf("a re-authentication while the audit refuses: %s", got)
	}
	subscribe(t, live, "Market", "Security!BHP.ASX", 2)
}
