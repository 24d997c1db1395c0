package wsauth

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// dialAuthenticated opens a socket authenticated with tok, on the upgrade
// or by an AuthToken message.
func dialAuthenticated(t testing.TB, e *testEnv, tok string, header bool) *websocket.Conn {
	t.Helper()
	if header {
		return e.dial(bearer(tok))
	}
	c := e.dial(nil)
	if got := roundTrip(t, c, authToken("Bearer", tok)); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("AuthToken: %s", got)
	}
	return c
}

// TestExpiryAndResume: at expiry the backend gets an Unsub per
// subscription (reserved TransactionIDs, whose answers never reach the
// client) and other than Auth messages are refused; a fresh AuthToken
// re-sends the client's own Subs, and the snapshots come back.
func TestExpiryAndResume(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header bool
	}{{"header auth", true}, {"AuthToken", false}} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newLiveEnv(t, nil)
			c := dialAuthenticated(t, e, tokDemo, tt.header)
			subscribe(t, c, "Market", "Security!BHP.ASX", 11)
			subscribe(t, c, "News", "News!ASX", 12)

			clock.set(testExpiry)
			eventually(t, "an Unsub per subscription at the backend", func() bool {
				return e.backend.gatewayUnsubs("Market", "Security!BHP.ASX") == 1 && e.backend.gatewayUnsubs("News", "News!ASX") == 1
			})
			eventually(t, "the session counted as expired", func() bool {
				return e.gauge(StateExpired) == 1 && e.gauge(StateAuthenticated) == 0
			})
			// Refused, not forwarded; the backend's answers to the Unsubs
			// do not come first.
			depth := `{"Controller":"Market","Topic":"Depth!BHP.ASX","TransactionID":13}`
			if got, want := roundTrip(t, c, depth), errorMsg("Market", "Depth!BHP.ASX", 13, zenith.CodeAuthority); got != want {
				t.Fatalf("after expiry:\n got %s\nwant %s", got, want)
			}
			if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Result":"Reject"`) {
				t.Fatalf("QueryIdentify after expiry: %s", got)
			}
			if n := e.backend.countExact(depth); n != 0 {
				t.Fatal("a message reached the backend after expiry")
			}
			// Counted and logged by the supervisor once it let go of the
			// session, which may be just after the client saw the lapse.
			eventually(t, "the expiry counted and logged", func() bool {
				return e.lapses(LapseExpired) == 1 && e.logs.FilterMessage("ws authority lapsed").FilterField(zap.String("reason", "expired")).Len() == 1
			})
			if e.lapses(LapseExpired) != 1 {
				t.Fatal("the expiry was counted twice")
			}

			later := madeUpToken("u-demo", []string{"openid", policy.ScopeMarket, policy.ScopeNews}, 24*time.Hour)
			if got := roundTrip(t, c, authToken("Bearer", later)); !strings.Contains(got, `"Result":"Success"`) || !strings.Contains(got, `"ExpiryDate":"20261122T103000Z"`) {
				t.Fatalf("fresh AuthToken: %s", got)
			}
			// The feed resumes with fresh snapshots; nothing answering the
			// gateway's Unsubs reaches the client (the backend answered
			// them before the Subs).
			sameSet(t, "after the fresh token", readN(t, c, 2),
				[]string{snapshot("Market", "Security!BHP.ASX", 11), snapshot("News", "News!ASX", 12)})
			for _, m := range []string{subMsg("Market", "Security!BHP.ASX", 11), subMsg("News", "News!ASX", 12)} {
				if n := e.backend.countExact(m); n != 2 {
					t.Fatalf("the backend got %s %d times, want twice (the client's, the gateway's re-send)", m, n)
				}
			}
			echo := `{"Controller":"Market","Topic":"Echo","TransactionID":14}`
			if got := roundTrip(t, c, echo); got != echo {
				t.Fatalf("after resuming: %s", got)
			}
			if e.gauge(StateAuthenticated) != 1 || e.gauge(StateExpired) != 0 ||
				e.metrics.get(func(m *fakeMetrics) int { return m.reauth }) != 1 {
				t.Fatal("gauge or re-authentication count wrong after resuming")
			}
			e.noTokenLogged(t, tokDemo, later)
		})
	}
}

// TestExpiryGrace: a lapsed session closes with 1008 (never 4xxx) once
// ExpiryGrace has passed since the lapse, and not when it re-authenticated
// in time.
func TestExpiryGrace(t *testing.T) {
	for _, tt := range []struct {
		name   string
		resume bool
	}{{"grace passed", false}, {"resumed within the grace", true}} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newLiveEnv(t, func(c *Config) { c.Live.ExpiryGrace = time.Minute })
			c := e.dial(bearer(tokDemo))
			subscribe(t, c, "Market", "Security!BHP.ASX", 11)
			clock.set(testExpiry)
			eventually(t, "the lapse", func() bool { return e.lapses(LapseExpired) == 1 })
			if tt.resume {
				later := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
				if got := roundTrip(t, c, authToken("Bearer", later)); !strings.Contains(got, `"Result":"Success"`) {
					t.Fatalf("fresh AuthToken: %s", got)
				}
				readMsg(t, c) // the snapshot
			}
			clock.set(testExpiry.Add(30 * time.Second))
			time.Sleep(5 * testTick)
			if e.sessions() != 1 {
				t.Fatal("closed within the grace")
			}
			clock.set(testExpiry.Add(time.Minute + time.Second))
			if !tt.resume {
				if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
					t.Fatalf("close code %d, want 1008", got)
				}
				eventually(t, "the session to end", func() bool { return e.sessions() == 0 })
				for _, st := range []State{StateUnauthenticated, StateAuthenticated, StateExpired} {
					if n := e.gauge(st); n != 0 {
						t.Fatalf("sessions gauge %s: %d after the close", st, n)
					}
				}
				if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); n != 0 {
					t.Fatalf("subscriptions gauge %d after the close", n)
				}
				return
			}
			time.Sleep(5 * testTick)
			echo := `{"Controller":"Market","Topic":"Echo"}`
			if got := roundTrip(t, c, echo); got != echo {
				t.Fatalf("a resumed session: %s", got)
			}
		})
	}
}

// TestScopeShrink: a re-authentication with fewer scopes ends each
// subscription no longer allowed: Error/Authority then a server Unsub
// (Confirm true) to the client, an Unsub to the backend (at once on a live
// session, already at the lapse on a lapsed one); the others stay, and a
// lapsed session's are re-sent. The policy's answer the session kept for
// the last message's Controller and Topic goes with the old scopes.
func TestScopeShrink(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lapsed bool
	}{{"live session", false}, {"lapsed session", true}} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newLiveEnv(t, nil)
			c := dialAuthenticated(t, e, tokDemo, false)
			subscribe(t, c, "Market", "Security!BHP.ASX", 21)
			subscribe(t, c, "News", "News!ASX", 22)
			if tt.lapsed {
				clock.set(testExpiry)
				eventually(t, "the lapse", func() bool { return e.backend.gatewayUnsubs("News", "News!ASX") == 1 })
			}
			narrow := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
			got := roundTrip(t, c, authToken("Bearer", narrow))
			if !strings.Contains(got, `"Result":"Success"`) || !strings.Contains(got, `"Scope":["Gatehouse.Service.Market"]`) {
				t.Fatalf("narrower AuthToken: %s", got)
			}
			n := 2
			if tt.lapsed {
				n = 3 // and the Market snapshot
			}
			msgs := readN(t, c, n)
			errMsg := errorMsg("News", "News!ASX", 22, zenith.CodeAuthority)
			unsub := `{"Controller":"News","Topic":"News!ASX","Action":"Unsub","TransactionID":22,"Confirm":true}`
			want := []string{errMsg, unsub}
			if tt.lapsed {
				want = append(want, snapshot("Market", "Security!BHP.ASX", 21))
			}
			sameSet(t, "after the narrower token", msgs, want)
			if i, j := indexOf(msgs, errMsg), indexOf(msgs, unsub); i > j {
				t.Fatal("the Unsub came before the Error")
			}
			// The Controller and Topic of the last message before the
			// shrink, whose policy answer the session kept: the new scopes
			// decide it.
			if got, want := roundTrip(t, c, subMsg("News", "News!ASX", 24)), errorMsg("News", "News!ASX", 24, zenith.CodeAuthority); got != want {
				t.Fatalf("News!ASX again after the shrink: %s", got)
			}
			eventually(t, "the backend's Unsub of the News subscription", func() bool { return e.backend.gatewayUnsubs("News", "News!ASX") == 1 })
			wantMarket := 0
			if tt.lapsed {
				wantMarket = 1
			}
			if n := e.backend.gatewayUnsubs("Market", "Security!BHP.ASX"); n != wantMarket {
				t.Fatalf("the backend got %d Unsubs of the Market subscription, want %d", n, wantMarket)
			}
			if n := e.backend.countExact(subMsg("News", "News!ASX", 22)); n != 1 {
				t.Fatalf("the News Sub reached the backend %d times, want once", n)
			}
			if n := e.backend.countExact(subMsg("News", "News!ASX", 24)); n != 0 {
				t.Fatalf("the News Sub after the shrink reached the backend %d times", n)
			}
			if got, want := roundTrip(t, c, `{"Controller":"News","Topic":"QueryNews","TransactionID":23}`), errorMsg("News", "QueryNews", 23, zenith.CodeAuthority); got != want {
				t.Fatalf("News after the shrink: %s", got)
			}
			if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"]*10 + m.subs["News"] }); n != 10 {
				t.Fatalf("subscriptions gauge Market*10+News = %d, want 10", n)
			}
		})
	}
}

func indexOf(msgs []string, m string) int {
	for i, x := range msgs {
		if x == m {
			return i
		}
	}
	return -1
}

// TestReauthOtherSubject: a credential for another subject is Reject, and
// the session stays exactly as it was, live or lapsed.
func TestReauthOtherSubject(t *testing.T) {
	for _, tt := range []struct {
		name   string
		lapsed bool
	}{{"live session", false}, {"lapsed session", true}} {
		t.Run(tt.name, func(t *testing.T) {
			e, clock := newLiveEnv(t, nil)
			c := dialAuthenticated(t, e, tokDemo, false)
			subscribe(t, c, "Market", "Security!BHP.ASX", 51)
			if got := roundTrip(t, c, `{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":52}`); !strings.Contains(got, `"Confirm":true`) {
				t.Fatalf("Identify Sub: %s", got)
			}
			if tt.lapsed {
				clock.set(testExpiry)
				eventually(t, "the lapse", func() bool { return e.lapses(LapseExpired) == 1 })
			}
			before := roundTrip(t, c, queryIdentify)
			other := madeUpToken("u-other", []string{policy.ScopeMarket, policy.ScopeNews, policy.ScopeTrading}, 24*time.Hour)
			if got := roundTrip(t, c, authToken("Bearer", other)); !strings.Contains(got, `"Result":"Reject"`) {
				t.Fatalf("another subject: %s", got)
			}
			// No Identify push, no re-Sub: the next message answers the
			// next request.
			if got := roundTrip(t, c, queryIdentify); got != before {
				t.Fatalf("QueryIdentify changed:\n got %s\nwant %s", got, before)
			}
			depth := `{"Controller":"Market","Topic":"Echo","TransactionID":53}`
			want := depth
			if tt.lapsed {
				want = errorMsg("Market", "Echo", 53, zenith.CodeAuthority)
			}
			if got := roundTrip(t, c, depth); got != want {
				t.Fatalf("after the reject:\n got %s\nwant %s", got, want)
			}
			if n := e.backend.countExact(subMsg("Market", "Security!BHP.ASX", 51)); n != 1 {
				t.Fatalf("the Sub reached the backend %d times", n)
			}
			if e.metrics.get(func(m *fakeMetrics) int { return m.reauth }) != 0 {
				t.Fatal("counted as a re-authentication")
			}
		})
	}
}

// TestIdentifySubscription: Identify Sub answers the identity (Action Sub,
// Confirm true); each re-authentication pushes the new one (scopes,
// expiry), which QueryIdentify also shows; Unsub ends the pushes.
func TestIdentifySubscription(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	got := roundTrip(t, c, `{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":41}`)
	if want := `{"Controller":"Auth","Topic":"Identify","Action":"Sub","TransactionID":41,"Confirm":true,"Data":` + identifyDemo + `}`; got != want {
		t.Fatalf("Identify Sub:\n got %s\nwant %s", got, want)
	}
	wideData := `{"Result":"Success","DisplayName":"u-demo","UserID":"u-demo","ExpiryDate":"20261122T103000Z",` +
		`"Scope":["Gatehouse.Service.Market","Gatehouse.Service.News","Gatehouse.Service.Trading"]}`
	for _, tt := range []struct {
		name, tok, push string
	}{
		{"wider and later", madeUpToken("u-demo", []string{policy.ScopeMarket, policy.ScopeNews, policy.ScopeTrading}, 24*time.Hour),
			`{"Controller":"Auth","Topic":"Identify","Action":"Publish","Data":` + wideData + `}`},
		{"narrower", madeUpToken("u-demo", []string{policy.ScopeNews}, 2*time.Hour),
			`{"Controller":"Auth","Topic":"Identify","Action":"Publish","Data":{"Result":"Success","DisplayName":"u-demo","UserID":"u-demo","ExpiryDate":"20261121T123000Z","Scope":["Gatehouse.Service.News"]}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := roundTrip(t, c, authToken("Bearer", tt.tok)); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("AuthToken: %s", got)
			}
			if got := readMsg(t, c); got != tt.push {
				t.Fatalf("push:\n got %s\nwant %s", got, tt.push)
			}
			want := strings.Replace(strings.Replace(tt.push, `"Topic":"Identify"`, `"Topic":"QueryIdentify"`, 1), `"Publish"`, `"Publish","TransactionID":2`, 1)
			if got := roundTrip(t, c, queryIdentify); got != want {
				t.Fatalf("QueryIdentify:\n got %s\nwant %s", got, want)
			}
		})
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"Identify","Action":"Unsub","TransactionID":42}`)); err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, c, authToken("Bearer", tokDemo)); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("AuthToken: %s", got)
	}
	if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Topic":"QueryIdentify"`) {
		t.Fatalf("a push after the Unsub: %s", got)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.reauth }); n != 3 {
		t.Fatalf("re-authentications counted: %d", n)
	}
}

// TestClientUnsubAsTheGatewayWritesIt: a client's Unsub reaches the
// backend as the gateway writes its own, with the client's Controller,
// Topic, TransactionID and Confirm (a request for a confirmation), and
// without anything else the client put in it: an Unsub the backend could
// not read would leave the subscription open there while the gateway
// forgets it.
func TestClientUnsubAsTheGatewayWritesIt(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	for _, tt := range []struct{ sent, forwarded string }{
		{`{"Data":{"x":[1,{"y":null}]},"Confirm":true,"TransactionID":7,"Action":"Unsub","Topic":"Security!BHP.\u0041SX","Controller":"Market","Extra":1}`,
			`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Unsub","TransactionID":7,"Confirm":true}`},
		{`{"Controller":"Market","Topic":"Security!CBA.ASX","Action":"Unsub","Confirm":false}`,
			`{"Controller":"Market","Topic":"Security!CBA.ASX","Action":"Unsub"}`},
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(tt.sent)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for e.backend.countExact(tt.forwarded) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the backend got %q, want %s", tt.sent, e.backend.received(), tt.forwarded)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); n != 0 {
		t.Errorf("subscriptions tracked: %d", n)
	}
}
