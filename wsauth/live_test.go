package wsauth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
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
			if got, want := roundTrip(t, c, depth), errorMsg("Market", "Depth!BHP.ASX", 13, CodeAuthority); got != want {
				t.Fatalf("after expiry:\n got %s\nwant %s", got, want)
			}
			if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"Result":"Reject"`) {
				t.Fatalf("QueryIdentify after expiry: %s", got)
			}
			if n := e.backend.countExact(depth); n != 0 {
				t.Fatal("a message reached the backend after expiry")
			}
			if e.lapses(LapseExpired) != 1 || e.logs.FilterMessage("ws authority lapsed").FilterField(zap.String("reason", "expired")).Len() != 1 {
				t.Fatal("the expiry was not counted and logged")
			}

			later := madeUpToken("u-demo", []string{"openid", ScopeMarket, ScopeNews}, 24*time.Hour)
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
			e, clock := newLiveEnv(t, func(c *Config) { c.ExpiryGrace = time.Minute })
			c := e.dial(bearer(tokDemo))
			subscribe(t, c, "Market", "Security!BHP.ASX", 11)
			clock.set(testExpiry)
			eventually(t, "the lapse", func() bool { return e.lapses(LapseExpired) == 1 })
			if tt.resume {
				later := madeUpToken("u-demo", []string{ScopeMarket}, 24*time.Hour)
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
// lapsed session's are re-sent.
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
			narrow := madeUpToken("u-demo", []string{ScopeMarket}, 24*time.Hour)
			got := roundTrip(t, c, authToken("Bearer", narrow))
			if !strings.Contains(got, `"Result":"Success"`) || !strings.Contains(got, `"Scope":["Gatehouse.Service.Market"]`) {
				t.Fatalf("narrower AuthToken: %s", got)
			}
			n := 2
			if tt.lapsed {
				n = 3 // and the Market snapshot
			}
			msgs := readN(t, c, n)
			errMsg := errorMsg("News", "News!ASX", 22, CodeAuthority)
			unsub := `{"Controller":"News","Topic":"News!ASX","Action":"Unsub","TransactionID":22,"Confirm":true}`
			want := []string{errMsg, unsub}
			if tt.lapsed {
				want = append(want, snapshot("Market", "Security!BHP.ASX", 21))
			}
			sameSet(t, "after the narrower token", msgs, want)
			if i, j := indexOf(msgs, errMsg), indexOf(msgs, unsub); i > j {
				t.Fatal("the Unsub came before the Error")
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
			if got, want := roundTrip(t, c, `{"Controller":"News","Topic":"QueryNews","TransactionID":23}`), errorMsg("News", "QueryNews", 23, CodeAuthority); got != want {
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

// TestRevocation: once the verifier refuses a live session's token
// (revoked, its user disabled), the session's authority ends within
// RecheckInterval plus a tick, as at expiry, with a Reject push; a
// verifier fault changes nothing.
func TestRevocation(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		motif bool
		lapse bool
	}{
		{"revoked token", &Refusal{Reason: "revoked"}, false, true},
		{"user disabled", &Refusal{Reason: "user_disabled"}, false, true},
		{"motif profile", &Refusal{Reason: "revoked"}, true, true},
		{"verifier fault", errors.New("keys unavailable"), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newLiveEnv(t, func(c *Config) { c.Profile.Motif = tt.motif })
			tok := madeUpToken("u-demo", []string{ScopeMarket}, 24*time.Hour)
			c := e.dial(bearer(tok))
			subscribe(t, c, "Market", "Security!BHP.ASX", 31)
			start := time.Now()
			calls := e.ver.calls.Load()
			e.ver.refuse(tok, tt.err)
			if !tt.lapse {
				eventually(t, "three rechecks", func() bool { return e.ver.calls.Load() >= calls+3 })
				echo := `{"Controller":"Market","Topic":"Echo"}`
				if got := roundTrip(t, c, echo); got != echo {
					t.Fatalf("after a verifier fault: %s", got)
				}
				if e.lapses(LapseRevoked)+e.lapses(LapseExpired) != 0 || e.backend.gatewayUnsubs("Market", "Security!BHP.ASX") != 0 {
					t.Fatal("a verifier fault ended the session's authority")
				}
				return
			}
			result := "Reject"
			if tt.motif {
				result = "Rejected"
			}
			if got, want := readMsg(t, c), `{"Controller":"Auth","Topic":"Identify","Action":"Publish","Data":{"Result":"`+result+`"}}`; got != want {
				t.Fatalf("push:\n got %s\nwant %s", got, want)
			}
			// Within RecheckInterval and a tick (and a margin for -race).
			if d := time.Since(start); d > testRecheck+testTick+300*time.Millisecond {
				t.Fatalf("the revocation took %v", d)
			}
			eventually(t, "the Unsub at the backend", func() bool { return e.backend.gatewayUnsubs("Market", "Security!BHP.ASX") == 1 })
			if got, want := roundTrip(t, c, `{"Controller":"Market","Topic":"Depth","TransactionID":32}`), errorMsg("Market", "Depth", 32, CodeAuthority); got != want {
				t.Fatalf("after the revocation: %s", got)
			}
			if e.lapses(LapseRevoked) != 1 || e.gauge(StateExpired) != 1 {
				t.Fatal("the revocation was not counted")
			}
			audit := e.logs.FilterMessage("ws authority lapsed").FilterField(zap.String("reason", "revoked"))
			if audit.Len() != 1 || audit.All()[0].ContextMap()["user"] != "u-demo" || audit.All()[0].ContextMap()["client_id"] != "demo-app" {
				t.Fatalf("audit entries: %v", audit.All())
			}
			e.noTokenLogged(t, tok)
		})
	}
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
			other := madeUpToken("u-other", []string{ScopeMarket, ScopeNews, ScopeTrading}, 24*time.Hour)
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
				want = errorMsg("Market", "Echo", 53, CodeAuthority)
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
		{"wider and later", madeUpToken("u-demo", []string{ScopeMarket, ScopeNews, ScopeTrading}, 24*time.Hour),
			`{"Controller":"Auth","Topic":"Identify","Action":"Publish","Data":` + wideData + `}`},
		{"narrower", madeUpToken("u-demo", []string{ScopeNews}, 2*time.Hour),
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

// TestManySessionsLapseAndReauthenticate: many sessions lapse at once (a
// clock jump) while they re-authenticate, then each has its token revoked
// and authenticates again, several times, all at once. Under -race this
// shows the supervisor and the client readers share a session's state
// only under its lock; every gauge returns to zero.
func TestManySessionsLapseAndReauthenticate(t *testing.T) {
	const sessions, rounds = 16, 3
	e, clock := newLiveEnv(t, func(c *Config) { c.RecheckInterval = testTick })
	conns := make([]*websocket.Conn, sessions)
	for i := range conns {
		subject := "u-" + strconv.Itoa(i)
		conns[i] = dialAuthenticated(t, e, madeUpToken(subject, []string{ScopeMarket}, 0), i%2 == 0)
		subscribe(t, conns[i], "Market", "Security!S"+strconv.Itoa(i), 1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i, c := range conns {
		wg.Go(func() { errs <- churn(e, c, "u-"+strconv.Itoa(i), rounds) })
	}
	clock.set(testExpiry) // every first identity lapses, racing its re-authentication
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	if n := e.lapses(LapseRevoked); n != sessions*rounds {
		t.Errorf("revocations counted %d, want %d", n, sessions*rounds)
	}
	for i := range conns {
		topic := "Security!S" + strconv.Itoa(i)
		if n := e.backend.gatewayUnsubs("Market", topic); n < rounds {
			t.Errorf("session %d: the backend got %d Unsubs, want at least %d", i, n, rounds)
		}
		if n := e.backend.countExact(subMsg("Market", topic, 1)); n < rounds+1 {
			t.Errorf("session %d: the backend got the Sub %d times, want at least %d", i, n, rounds+1)
		}
	}
	for _, c := range conns {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	}
	eventually(t, "every session to end", func() bool { return e.sessions() == 0 })
	for _, st := range []State{StateUnauthenticated, StateAuthenticated, StateExpired} {
		if n := e.gauge(st); n != 0 {
			t.Errorf("sessions gauge %s: %d", st, n)
		}
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] }); n != 0 {
		t.Errorf("subscriptions gauge %d", n)
	}
}

// churn re-authenticates subject's session rounds times, each time
// checking a message is forwarded, then revoking the token and waiting for
// the Reject push; then once more. Messages the test does not wait for
// (snapshots, pushes) are skipped; none may carry a reserved
// TransactionID.
func churn(e *testEnv, c *websocket.Conn, subject string, rounds int) error {
	next := func() (string, error) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, m, err := c.ReadMessage()
		if err == nil && strings.Contains(string(m), `"TransactionID":9007199254`) {
			err = fmt.Errorf("%s: the client got the backend's answer to the gateway: %s", subject, m)
		}
		return string(m), err
	}
	await := func(want func(string) bool, what string) error {
		for {
			m, err := next()
			if err != nil {
				return fmt.Errorf("%s: waiting for %s: %w", subject, what, err)
			}
			if want(m) {
				return nil
			}
		}
	}
	for round := range rounds + 1 {
		tok := madeUpToken(subject, []string{ScopeMarket}, 24*time.Hour, strconv.Itoa(round))
		if err := c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tok))); err != nil {
			return err
		}
		if err := await(func(m string) bool {
			return strings.HasPrefix(m, `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":1,`)
		}, "the AuthToken reply"); err != nil {
			return err
		}
		echo := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(100+round) + `}`
		if err := c.WriteMessage(websocket.TextMessage, []byte(echo)); err != nil {
			return err
		}
		var got string
		if err := await(func(m string) bool { got = m; return strings.Contains(m, `"TransactionID":`+strconv.Itoa(100+round)) }, "the echo"); err != nil {
			return err
		}
		if got != echo {
			return fmt.Errorf("%s: round %d: %s", subject, round, got)
		}
		if round == rounds {
			return nil
		}
		e.ver.refuse(tok, &Refusal{Reason: "revoked"})
		if err := await(func(m string) bool { return strings.Contains(m, `"Result":"Reject"`) }, "the Reject push"); err != nil {
			return err
		}
	}
	return nil
}

// TestSupervisorLifecycle: the supervisor starts with the first session
// and Shutdown ends it.
func TestSupervisorLifecycle(t *testing.T) {
	e := newTestEnv(t, nil)
	running := func() bool {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		return e.gw.stopSup != nil
	}
	if running() {
		t.Fatal("a supervisor before any session")
	}
	c := e.dial(nil)
	roundTrip(t, c, queryIdentify)
	if !running() {
		t.Fatal("no supervisor with a session")
	}
	e.gw.Shutdown(websocket.CloseGoingAway)
	select {
	case <-e.gw.supDone:
	default:
		t.Fatal("the supervisor outlived Shutdown")
	}
}
