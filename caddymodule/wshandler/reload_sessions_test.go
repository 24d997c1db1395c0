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

// TestReloadAdmissionKeepsSessions: a reload that changes only what an
// upgrade reads (the allowed origins, compression) keeps the subscribed
// session on its backend leg. It failed when the pool key hashed the whole
// Transport: the session was drained with 1012.
func TestReloadAdmissionKeepsSessions(t *testing.T) {
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), "drain_window 1s")
	c := s.dial(s.token())
	subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
	for i, ws := range []string{
		"drain_window 1s\n\t\t\tallowed_origins https://desk.example",
		"drain_window 1s\n\t\t\tallowed_origins https://desk.example https://web.example\n\t\t\tcompression off",
	} {
		s.load(b.addr(), ws)
		m := publish("Market", "Security!BHP.ASX", 10+i)
		b.push(m)
		if got := next(t, c); got != m {
			t.Fatalf("after reload %d: %s, want %s", i+1, got, m)
		}
	}
	if n := b.upgrades(); n != 1 {
		t.Fatalf("the backend saw %d legs, want 1", n)
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
// supervisor and drains end), and the heap within 5% of it: the live
// objects of the first (each old configuration's verifiers, policy and
// venue table go), the spans in use of the tenth (the first reloads'
// garbage leaves survivors scattered over spans that later ones reuse:
// the spans in use grow by a few per cent while the live objects do not).
// It failed when Reconfigure did not end the supervisor it replaced: one
// more goroutine per reload; when each old configuration's verifier
// cache, which the reconfigured session's token was verified into, was
// kept by its scheduled sweep until the token expired: 100 KiB per reload;
// and, with the heap measured at once, when a quiet session remembered
// the configuration it last read by pointer, which kept the last reloads'
// reachable until the session's next message.
func TestReloadsLeaveNoGoroutine(t *testing.T) {
	// Sessions enough that what a reload may leave behind shows against
	// what they hold, and that the heap's noise of a few hundred KiB is
	// less than 5%.
	const heapSessions = 100
	// Pings every second: on a loaded machine some of what the last
	// reloads let go stayed reachable longer than heapSettle at the
	// default interval (30 s), released only at the sessions' next ping.
	// The sessions do not read while the reloads run, so they answer no
	// ping: idle_timeout is longer than the test (5 s closed one with 1008
	// on a loaded machine).
	room := "ping_interval 1s\n\t\t\tidle_timeout 5m\n\t\t\tlimits {\n\t\t\t\tsessions 1000\n\t\t\t}"
	b := newPushBackend(t)
	s := startReloadSite(t, b.addr(), room)
	tok := s.token()
	var conns []*websocket.Conn
	for range heapSessions {
		c := s.dial(tok)
		subscribeTo(t, c, "Market", "Security!BHP.ASX", 1)
		conns = append(conns, c)
	}
	c := conns[0]
	s.load(b.addr(), room)
	base := goroutinesSettled()
	_, baseLive := heapSettled()
	for range 9 {
		s.load(b.addr(), room)
	}
	baseInuse, _ := heapSettled()
	for range 90 {
		s.load(b.addr(), room)
	}
	if n := goroutinesSettled(); n > base+5 {
		t.Fatalf("%d goroutines after 100 reloads, %d after the first", n, base)
	}
	// The last reloads' old configurations end on goroutines of their own
	// (their verifiers' loops, Caddy's cleanup of the config before):
	// the heap is measured until it is back within bounds, for heapSettle
	// at most.
	var inuse, live uint64
	began := time.Now()
	for deadline := began.Add(heapSettle); ; time.Sleep(200 * time.Millisecond) {
		inuse, live = heapSettled()
		if float64(live) <= 1.05*float64(baseLive) && float64(inuse) <= 1.05*float64(baseInuse) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("settled in %v", time.Since(began).Round(time.Millisecond))
	t.Logf("live heap after the first reload %.2f MiB, after 100 %.2f MiB; in use after the tenth %.2f MiB, after 100 %.2f MiB",
		mib(baseLive), mib(live), mib(baseInuse), mib(inuse))
	if float64(live) > 1.05*float64(baseLive) {
		t.Errorf("live heap after 100 reloads %.2f MiB, after the first %.2f MiB: more than 5%% more", mib(live), mib(baseLive))
	}
	if float64(inuse) > 1.05*float64(baseInuse) {
		t.Errorf("heap in use after 100 reloads %.2f MiB, after the tenth %.2f MiB: more than 5%% more", mib(inuse), mib(baseInuse))
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

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// heapSettle bounds the wait for the heap to come back after reloads.
const heapSettle = 10 * time.Second
