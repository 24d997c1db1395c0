package integration

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Live sockets across config reloads, through the real binary: a reload
// that leaves a gateway's backend and transport as they were keeps its
// sessions (TestWSReloadsKeepManySessions), puts a narrower policy in
// force on them (TestWSReloadNarrowsPolicy); one that changes the
// upstream closes them with 1012, spread over the drain window
// (TestWSReloadDrainsOverTheWindow). The exit behind a balancer is in
// ws_balancer_test.go.

// reloadSessions is how many sessions TestWSReloadsKeepManySessions holds
// across its reloads: a deployment's gateway holds thousands; 1,000 is
// what one process of the test (a reader goroutine each) and the gatehouse
// (a client and a backend leg each, and the demo backend's end) hold on
// two cores next to the other tests.
const reloadSessions = 1000

// Its reloads: one every reloadEvery for reloadFor.
const (
	reloadEvery = 5 * time.Second
	reloadFor   = time.Minute
)

// bhpSub subscribes to BHP's quote, which the demo backend updates each
// tick.
var bhpSub = []byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1}`)

// quoteSession is a subscribed socket read by a goroutine of its own that
// keeps only when the last quote came and how the socket ended.
type quoteSession struct {
	c       *websocket.Conn
	last    atomic.Int64 // Unix ns of the last quote
	done    chan struct{}
	err     error     // why the socket ended; read after done
	endedAt time.Time // likewise
}

// leanDialer keeps each socket's buffers small: a thousand of them.
var leanDialer = websocket.Dialer{HandshakeTimeout: wsTimeout, Subprotocols: []string{"ServiceJson"}, ReadBufferSize: 1024, WriteBufferSize: 512}

// openQuoteSession dials path of g's site with token on the upgrade,
// subscribes to BHP's quote and starts reading.
func openQuoteSession(t testing.TB, g *Gatehouse, path, token string) (*quoteSession, error) {
	c, resp, err := leanDialer.Dial("ws://127.0.0.1:"+strconv.Itoa(g.Port)+path, http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		return nil, errors.Join(err, errors.New(respStatus(resp)))
	}
	s := newQuoteSession(c)
	t.Cleanup(func() { c.Close(); <-s.done })
	return s, s.subscribe()
}

// newQuoteSession starts reading c.
func newQuoteSession(c *websocket.Conn) *quoteSession {
	s := &quoteSession{c: c, done: make(chan struct{})}
	go s.read()
	return s
}

// subscribe subscribes s to BHP's quote.
func (s *quoteSession) subscribe() error {
	_ = s.c.SetWriteDeadline(time.Now().Add(wsTimeout))
	return s.c.WriteMessage(websocket.TextMessage, bhpSub)
}

func respStatus(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}

func (s *quoteSession) read() {
	defer close(s.done)
	for {
		_, raw, err := s.c.ReadMessage()
		if err != nil {
			s.err, s.endedAt = err, time.Now()
			return
		}
		if bytes.Contains(raw, []byte(`"Topic":"Security!BHP.ASX"`)) && !bytes.Contains(raw, []byte(`"Action":"Error"`)) {
			s.last.Store(time.Now().UnixNano())
		}
	}
}

// ended reports whether the socket has ended.
func (s *quoteSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// closeCode is the close code the server sent, or -1 when the socket
// ended without one.
func (s *quoteSession) closeCode() int {
	if ce, ok := errors.AsType[*websocket.CloseError](s.err); ok {
		return ce.Code
	}
	return -1
}

// quotesSince waits, within timeout, until every session has had a quote
// after since, and fails the test with how many had none.
func quotesSince(t testing.TB, sessions []*quoteSession, since time.Time, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		waiting := 0
		for _, s := range sessions {
			if s.last.Load() <= since.UnixNano() {
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sessions had no quote within %v", waiting, len(sessions), timeout)
		}
		time.Sleep(pollInterval)
	}
}

// manySessionsConfig is the demo with room for reloadSessions sessions of
// one user on /ws and their backend legs on the demo backend; extra is
// inserted in the site (another route, for a reload that changes only
// what is not the gateway).
func manySessionsConfig(t testing.TB, name, extra string) string {
	return demoVariant(t, name,
		configEdit{anchor: anchorWS, insert: "\t\tlimits {\n\t\t\tsessions " + strconv.Itoa(2*reloadSessions) + "\n\t\t}\n"},
		configEdit{anchor: "\tgatehouse_demo_backend\n", insert: "\tgatehouse_demo_backend {\n\t\tmax_connections " + strconv.Itoa(2*reloadSessions) + "\n\t}\n", replace: true},
		configEdit{anchor: anchorSite, insert: extra},
	)
}

// TestWSReloadsKeepManySessions holds reloadSessions subscribed sessions
// of the demo's /ws while the process reloads every reloadEvery for
// reloadFor, alternately the same config and one with another route: no
// session ends, every one gets quotes after the last reload, and each
// reload counts every session kept, none changed or closed, in one log
// line. The demo
// backend is in the reloaded config: it is kept too, with the gateway's
// backend legs. It failed when a reload drained the gateway's sessions
// (1012, spread over reload_delay), and when it kept the gateway but
// closed the demo backend's connections a minute after it.
func TestWSReloadsKeepManySessions(t *testing.T) {
	t.Parallel()
	// The gatehouse holds three sockets a session (the client's, the
	// backend leg, the demo backend's end of it), this process one; Go
	// raises both processes' soft limit to the hard one.
	if soft, hard, err := openFileLimit(); err != nil || soft < 2*reloadSessions || hard < 4*reloadSessions {
		t.Fatalf("open files: limit %d, hard %d (%v): %d sessions need %d here and %d in the gatehouse; raise ulimit -n",
			soft, hard, err, reloadSessions, 2*reloadSessions, 4*reloadSessions)
	}
	began := time.Now()
	same := manySessionsConfig(t, "many", "")
	other := manySessionsConfig(t, "many-other", "\thandle /reload-probe {\n\t\trespond \"probe\" 200\n\t}\n")
	g := StartGatehouseWith(t, Options{Config: same})
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken

	sessions := make([]*quoteSession, reloadSessions)
	var wg sync.WaitGroup
	var failed atomic.Int32
	var firstErr atomic.Value
	const dialers = 8
	for w := range dialers {
		wg.Go(func() {
			for i := w; i < reloadSessions; i += dialers {
				s, err := openQuoteSession(t, g, "/ws?version=1.1", tok)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				sessions[i] = s
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d dialers failed; the first: %v", n, firstErr.Load())
	}
	quotesSince(t, sessions, time.Time{}, 30*time.Second)
	t.Logf("%d sessions subscribed in %v", reloadSessions, time.Since(began).Round(time.Millisecond))

	reloads := 0
	var lastReload time.Time
	for start := time.Now(); time.Since(start) < reloadFor; {
		next := start.Add(time.Duration(reloads) * reloadEvery)
		time.Sleep(time.Until(next))
		config := same
		if reloads%2 == 1 {
			config = other
		}
		g.Reload(config)
		lastReload = time.Now()
		reloads++
		if i := slices.IndexFunc(sessions, (*quoteSession).ended); i >= 0 {
			t.Fatalf("after reload %d, session %d ended: close %d (%v)", reloads, i, sessions[i].closeCode(), sessions[i].err)
		}
	}
	quotesSince(t, sessions, lastReload, 15*time.Second)
	if n := len(slices.DeleteFunc(slices.Clone(sessions), func(s *quoteSession) bool { return !s.ended() })); n > 0 {
		t.Fatalf("%d sessions ended across the reloads", n)
	}
	metrics := scrapeMetrics(t, g)
	for outcome, want := range map[string]float64{"kept": float64(reloads * reloadSessions), "changed": 0, "closed": 0} {
		if v := metricValue(metrics, `gatehouse_ws_reload_sessions_total{outcome="`+outcome+`"}`); v != want {
			t.Errorf("gatehouse_ws_reload_sessions_total{outcome=%q} = %v after %d reloads, want %v", outcome, v, reloads, want)
		}
	}
	// One line per reload, the demo's two gateways (/ws, /Zenith) together.
	lines := logEntries(t, g, "ws reload")
	if n := countEntries(lines, map[string]any{"kept": float64(reloadSessions), "changed": 0.0, "closed": 0.0}); len(lines) != reloads || n != reloads {
		t.Errorf("%d ws reload lines, %d of them of %d sessions kept, want one per reload, %d", len(lines), n, reloadSessions, reloads)
	}
	t.Logf("%d sessions across %d reloads, every one receiving; %v in all", reloadSessions, reloads, time.Since(began).Round(time.Millisecond))
}

// TestWSReloadNarrowsPolicy: a reload whose /ws policy denies Trading
// ends a live session's Trading subscription as a scope lost at a
// re-authentication does (Error Authority, then a server Unsub with
// Confirm true, both with the Sub's TransactionID); the socket stays
// open, its Market subscription goes on untouched, and a Trading message
// is now refused. It failed when a reload closed the sessions or left
// them under the old policy.
func TestWSReloadNarrowsPolicy(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	const bhp = "Security!BHP.ASX"
	c := liveSession(t, g, "trader", g.TradingToken(t).AccessToken)
	// Forwarded and tracked: the demo backend serves no Trading
	// subscription and answers it with Operation.Unknown.
	if m := c.request(msg("Trading", "Orders", "Sub", "2"), "2"); m.errorCode() != "Operation.Unknown" {
		t.Fatalf("Trading Orders Sub: %s, want the backend's answer", m)
	}
	subscribeSecurity(t, c, bhp, "3")

	mark := c.mark()
	g.Reload(wsConfig(t, "deny-trading", "policy {", "\tdeny Trading *", "}"))
	orders := func(m *liveMsg) bool { return m.Controller == "Trading" && m.Topic == "Orders" }
	taken := c.until("the server Unsub of Trading Orders", wsTimeout, func(m *liveMsg) bool { return orders(m) && m.Action == "Unsub" })
	denial := index(taken, func(m *liveMsg) bool { return orders(m) && m.isError("2", "Authority") })
	if unsub := taken[len(taken)-1]; denial < 0 || !unsub.Confirm || unsub.tid() != "2" {
		t.Fatalf("after the reload: %q, want Error Authority, then Unsub with Confirm true, both TransactionID 2", taken)
	}
	if m := c.request(msg("Trading", "QueryAccounts", "Publish", "4"), "4"); !m.isError("4", "Authority") {
		t.Fatalf("QueryAccounts after the reload: %s, want Error Authority", m)
	}
	c.next("an update after the reload", wsTimeout, func(m *liveMsg) bool { return m.update(bhp) })
	if i := index(c.since(mark), func(m *liveMsg) bool {
		return m.Controller == "Market" && (m.Action == "Unsub" || m.Action == "Error" || m.tid() == "3" || snapshot(m, bhp))
	}); i >= 0 {
		t.Fatalf("the Market subscription was touched by the reload: %s", c.since(mark)[i])
	}
	metricBecomes(t, g, `gatehouse_ws_reload_sessions_total{outcome="changed"}`, 1)
	metricBecomes(t, g, `gatehouse_ws_reload_sessions_total{outcome="closed"}`, 0)
}

// drainWindow is the drain window of the tests that watch a drain.
const drainWindow = 3 * time.Second

// drainSlack is what a drain's last close may take past its window on a
// loaded machine: the reload's own work before the drain starts, the
// close's write and the scheduling of the last timer.
const drainSlack = 2 * time.Second

// ending is how a socket ended: its close code (-1 without a close frame)
// and when.
type ending struct {
	code int
	at   time.Time
	err  error
}

// ending is how s ended; call it once s has ended.
func (s *quoteSession) ending() ending { return ending{s.closeCode(), s.endedAt, s.err} }

// checkSpread checks that every socket closed with 1012, none before from,
// none after until, and that the closes spread over the window: each third
// of it has at least a sixth of them.
func checkSpread(t *testing.T, what string, ends []ending, from, until time.Time, window time.Duration) {
	t.Helper()
	var first time.Time
	for i, e := range ends {
		if e.code != websocket.CloseServiceRestart {
			t.Errorf("%s: socket %d closed with %d (%v), want 1012", what, i, e.code, e.err)
		}
		if e.at.Before(from) || e.at.After(until) {
			t.Errorf("%s: socket %d closed at %s, outside %s..%s", what, i, e.at.Format("15:04:05.000"), from.Format("15:04:05.000"), until.Format("15:04:05.000"))
		}
		if first.IsZero() || e.at.Before(first) {
			first = e.at
		}
	}
	var thirds [3]int
	for _, e := range ends {
		thirds[min(2, max(0, int(3*e.at.Sub(first)/window)))]++
	}
	for i, n := range thirds {
		if n < len(ends)/6 {
			t.Errorf("%s: closes per third of the %v window %v: third %d has %d of %d, want them spread", what, window, thirds, i+1, n, len(ends))
		}
	}
	t.Logf("%s: closes per third of the window: %v", what, thirds)
}

// TestWSReloadDrainsOverTheWindow: a reload that changes the /ws
// gateway's upstream (another URL of the same backend, in a process of
// its own) closes its live sessions with 1012, none before the reload and
// every one within the drain window after it, spread evenly over it; a
// new session is served by the new config. It failed when the drain
// closed every session at once at the end of reload_delay.
func TestWSReloadDrainsOverTheWindow(t *testing.T) {
	t.Parallel()
	backend, upstream := externalBackend(t)
	window := "drain_window " + drainWindow.String()
	g := StartGatehouseWith(t, Options{Config: externalBackendConfig(t, "drain-1", upstream, window)})
	backend.AlsoCheckSecretsOf(g)
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	const n = 30
	sessions := make([]*quoteSession, n)
	for i := range sessions {
		s, err := openQuoteSession(t, g, "/ws?version=1.1", tok)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = s
	}
	quotesSince(t, sessions, time.Time{}, wsTimeout)

	from := time.Now()
	g.Reload(externalBackendConfig(t, "drain-2", upstream[:len(upstream)-1], window))
	reloaded := time.Now()
	for _, s := range sessions {
		select {
		case <-s.done:
		case <-time.After(time.Until(from.Add(drainWindow + drainSlack + wsTimeout))):
			t.Fatalf("a session still open %v after the reload", time.Since(from))
		}
	}
	ends := make([]ending, n)
	for i, s := range sessions {
		ends[i] = s.ending()
	}
	checkSpread(t, "reload", ends, from, reloaded.Add(drainWindow+drainSlack), drainWindow)
	s, err := openQuoteSession(t, g, "/ws?version=1.1", tok)
	if err != nil {
		t.Fatal(err)
	}
	quotesSince(t, []*quoteSession{s}, time.Time{}, wsTimeout)
	metricBecomes(t, g, `gatehouse_ws_reload_sessions_total{outcome="closed"}`, n)
}
