package wshandler

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"
)

// TestReloadKeepsSessions: a subscribed session outlives 20 reloads of a
// config whose gateway is unchanged: after each, what the backend pushes
// reaches it, on the same backend leg, and each reload counts it kept. It
// failed when Cleanup closed every socket with 1012 after a reload.
func TestReloadKeepsSessions(t *testing.T) {
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), "drain_window 1s")
	c := s.dial(s.token())
	subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
	kept := reloadCount(t, "kept")
	for i := range 20 {
		s.load(b.addr(), "drain_window 1s")
		m := publish("Market", "Security!BHP.ASX", 100+i)
		b.push(m)
		if got := next(t, c); got != m {
			t.Fatalf("after reload %d: %s, want %s", i+1, got, m)
		}
	}
	if n := b.upgrades(); n != 1 {
		t.Fatalf("the backend saw %d legs, want 1", n)
	}
	if got := reloadCount(t, "kept") - kept; got != 20 {
		t.Fatalf("gatehouse_ws_reload_sessions_total{outcome=kept} grew by %v, want 20", got)
	}
}

// TestReloadNarrowsPolicy: a reload whose policy denies News ends the
// session's News subscription with the scope-shrink sequence
// (Error/Authority, then a server Unsub) and leaves its Market one
// flowing, the socket open. It failed before the sessions were kept: the
// socket was closed with 1012.
func TestReloadNarrowsPolicy(t *testing.T) {
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), "")
	c := s.dial(s.token())
	subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
	subscribeTo(t, c, "News", "News!ASX", 2)
	changed := reloadCount(t, "changed")
	s.load(b.addr(), "policy {\n\t\t\t\tdeny News *\n\t\t\t}")
	want := []string{
		`{"Controller":"News","Topic":"News!ASX","Action":"Error","TransactionID":2,"Data":"Authority"}`,
		`{"Controller":"News","Topic":"News!ASX","Action":"Unsub","TransactionID":2,"Confirm":true}`,
	}
	for _, w := range want {
		if got := next(t, c); got != w {
			t.Fatalf("after the reload: %s, want %s", got, w)
		}
	}
	m := publish("Market", "Security!BHP.ASX", 3)
	b.push(m)
	if got := next(t, c); got != m {
		t.Fatalf("the Market subscription after the reload: %s", got)
	}
	if got := reloadCount(t, "changed") - changed; got != 1 {
		t.Fatalf("gatehouse_ws_reload_sessions_total{outcome=changed} grew by %v, want 1", got)
	}
}

// TestReloadChangedUpstreamDrains: a reload that changes the upstream
// closes the sessions with 1012, spread over the drain window: none
// before the reload, one at the window's start, the last in its second
// half, all by its end (and the close handshake). It failed when the
// sockets were all closed at once after reload_delay.
func TestReloadChangedUpstreamDrains(t *testing.T) {
	b, other := newPushBackend(t), newPushBackend(t)
	const window = 1200 * time.Millisecond
	s := startReloadSite(t, b.addr(), "drain_window 1200ms")
	tok := s.token()
	conns := make([]*websocket.Conn, 4)
	for i := range conns {
		conns[i] = s.dial(tok)
		subscribeTo(t, conns[i], "Market", "Security!BHP.ASX", 1)
	}
	ends := make(chan time.Time, len(conns))
	codes := make(chan int, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					code := -1
					if ce, ok := err.(*websocket.CloseError); ok {
						code = ce.Code
					}
					ends <- time.Now()
					codes <- code
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if len(ends) != 0 {
		t.Fatal("a session closed before the reload")
	}
	start := time.Now()
	s.load(other.addr(), "drain_window 1200ms")
	var first, last time.Duration = time.Hour, 0
	for range conns {
		select {
		case at := <-ends:
			if code := <-codes; code != websocket.CloseServiceRestart {
				t.Errorf("close code %d, want 1012", code)
			}
			first, last = min(first, at.Sub(start)), max(last, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatal("a session was not closed")
		}
	}
	if first > window/3 || last < window/2 || last > window+time.Second {
		t.Fatalf("closed from %v to %v after the reload, want spread over %v", first, last, window)
	}
	// The new config's gateway serves the new upstream.
	c := s.dial(tok)
	subscribeTo(t, c, "Market", "Security!RIO.ASX", 1)
	if other.upgrades() != 1 {
		t.Fatalf("the new upstream saw %d legs", other.upgrades())
	}
}

// TestReloadThenRevoke: after a reload a revocation at the new config's
// revocation endpoint ends the kept session's authority at once (the new
// verifier's revocation signal: recheck_interval is an hour), and an
// AuthToken with a fresh token brings it back, its subscription re-sent.
// It failed when the kept session stayed on the old verifier, whose
// signal nobody fires any more: the session kept its authority.
func TestReloadThenRevoke(t *testing.T) {
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), "")
	tok := s.token()
	c := s.dial(tok)
	subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
	s.load(b.addr(), "auth_timeout 9s")
	if status, body := s.post("/connect/revocation", url.Values{"token": {tok}}); status != http.StatusOK {
		t.Fatalf("revocation: %d %s", status, body)
	}
	if got := next(t, c); !strings.Contains(got, `"Result":"Reject"`) {
		t.Fatalf("after the revocation: %s, want the Identify push with Reject", got)
	}
	auth := fmt.Sprintf(`{"Controller":"Auth","Topic":"AuthToken","TransactionID":7,"Data":{"Provider":"Bearer","AccessToken":%q}}`, s.token())
	if err := c.WriteMessage(websocket.TextMessage, []byte(auth)); err != nil {
		t.Fatal(err)
	}
	if got := next(t, c); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("AuthToken after the revocation: %s", got)
	}
	if got, want := next(t, c), publish("Market", "Security!BHP.ASX", 1); got != want {
		t.Fatalf("the re-sent Sub's snapshot: %s", got)
	}
}

// TestReloadsLeaveNoGoroutine: 100 reloads with a session kept leave the
// goroutines as after the first (each old configuration's verifier loops,
// supervisor and drains end). It failed when Reconfigure did not end the
// supervisor it replaced: one more goroutine per reload.
func TestReloadsLeaveNoGoroutine(t *testing.T) {
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), "")
	c := s.dial(s.token())
	subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
	s.load(b.addr(), "")
	base := goroutinesSettled()
	for range 99 {
		s.load(b.addr(), "")
	}
	if n := goroutinesSettled(); n > base+5 {
		t.Fatalf("%d goroutines after 100 reloads, %d after the first", n, base)
	}
	m := publish("Market", "Security!BHP.ASX", 2)
	b.push(m)
	if got := next(t, c); got != m {
		t.Fatalf("after 100 reloads: %s", got)
	}
}

// reloadCount is gatehouse_ws_reload_sessions_total{outcome}.
func reloadCount(t *testing.T, outcome string) float64 {
	t.Helper()
	var m dto.Metric
	if err := reloadSessions.WithLabelValues(outcome).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
