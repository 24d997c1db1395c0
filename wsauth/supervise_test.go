package wsauth

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

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
			tok := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
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
			if got, want := roundTrip(t, c, `{"Controller":"Market","Topic":"Depth","TransactionID":32}`), errorMsg("Market", "Depth", 32, zenith.CodeAuthority); got != want {
				t.Fatalf("after the revocation: %s", got)
			}
			// Counted and audited by the supervisor once it let go of the
			// session, which may be just after the client saw the lapse.
			eventually(t, "the revocation counted and audited", func() bool {
				return e.lapses(LapseRevoked) == 1 &&
					e.logs.FilterMessage("ws authority lapsed").FilterField(zap.String("reason", "revoked")).Len() == 1
			})
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

// TestManySessionsLapseAndReauthenticate: many sessions lapse at once (a
// clock jump) while they re-authenticate, then each has its token revoked
// and authenticates again, several times, all at once. Under -race this
// shows the supervisor and the client readers share a session's state
// only under its lock; every gauge returns to zero.
func TestManySessionsLapseAndReauthenticate(t *testing.T) {
	const sessions, rounds = 16, 3
	e, clock := newLiveEnv(t, func(c *Config) { c.Live.RecheckInterval = testTick })
	conns := make([]*websocket.Conn, sessions)
	for i := range conns {
		subject := "u-" + strconv.Itoa(i)
		conns[i] = dialAuthenticated(t, e, madeUpToken(subject, []string{policy.ScopeMarket}, 0), i%2 == 0)
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
	eventually(t, "every revocation counted", func() bool { return e.lapses(LapseRevoked) >= sessions*rounds })
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
		tok := madeUpToken(subject, []string{policy.ScopeMarket}, 24*time.Hour, strconv.Itoa(round))
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

// TestSlowBackendDoesNotDelayOthers: a session whose backend has stopped
// reading (its client reader blocked writing to it, WriteTimeout long)
// does not hold up the supervisor: when that session expires, and another
// after it, the other lapses within a few walks, its Unsub at its backend,
// not once the slow leg's write has timed out.
func TestSlowBackendDoesNotDelayOthers(t *testing.T) {
	t.Parallel() // its own env; it waits out the slow leg's WriteTimeout
	const writeTimeout = 5 * time.Second
	e, clock := newLiveEnv(t, func(c *Config) { c.Transport.WriteTimeout = writeTimeout })
	slow := dialAuthenticated(t, e, madeUpToken("u-slow", []string{policy.ScopeMarket}, -30*time.Minute), false)
	subscribe(t, slow, "Market", "Security!BHP.ASX", 1)
	other := dialAuthenticated(t, e, tokDemo, false)
	subscribe(t, other, "News", "News!ASX", 2)

	// The slow session's backend stops reading; its socket buffers made
	// small, one message is more than they hold.
	var s *session
	e.gw.mu.Lock()
	for x := range e.gw.sessions {
		x.mu.Lock()
		if x.auth.id.Subject == "u-slow" {
			s = x
		}
		x.mu.Unlock()
	}
	e.gw.mu.Unlock()
	if err := s.auth.bw.NetConn().(*net.TCPConn).SetWriteBuffer(4096); err != nil {
		t.Fatal(err)
	}
	e.backend.mu.Lock()
	bconn := e.backend.conns[0].NetConn().(*net.TCPConn) // the first leg opened
	e.backend.mu.Unlock()
	if err := bconn.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if err := slow.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Stall"}`)); err != nil {
		t.Fatal(err)
	}
	// Messages one at a time, each written to the backend by the client
	// reader outside the session's lock (flushBackend, the client socket
	// dry), until one waits there.
	big := `{"Controller":"Market","Topic":"Echo","Data":"` + strings.Repeat("x", 30<<10) + `"}`
	flushWaits := func() bool {
		if !s.mu.TryLock() {
			return false
		}
		defer s.mu.Unlock()
		return s.auth.bw.Writing()
	}
	for i := 0; !flushWaits(); i++ {
		if i == 300 {
			t.Fatal("the slow session's flush never waited on its backend")
		}
		_ = slow.SetWriteDeadline(time.Now().Add(time.Second))
		if err := slow.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	clock.set(testExpiry.Add(-30 * time.Minute)) // the slow session expires
	time.Sleep(5 * testTick)
	clock.set(testExpiry) // then the other
	start := time.Now()
	eventually(t, "the other session's lapse", func() bool { return e.backend.gatewayUnsubs("News", "News!ASX") == 1 })
	if d := time.Since(start); d > writeTimeout/5 {
		t.Fatalf("the other session lapsed after %v, behind the slow backend", d)
	}
	if got, want := roundTrip(t, other, subMsg("News", "News!ASX", 3)), errorMsg("News", "News!ASX", 3, zenith.CodeAuthority); got != want {
		t.Fatalf("the other session after its expiry: %s", got)
	}
	eventually(t, "both lapses counted", func() bool { return e.lapses(LapseExpired) == 2 })
}
