package wsauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// testClock is a Hooks.Now the test sets.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.set(t)
	return c
}

func (c *testClock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Intervals of the live tests' supervisor.
const (
	testTick    = 20 * time.Millisecond
	testRecheck = 100 * time.Millisecond
)

// newLiveEnv is a test env whose supervisor walks every testTick and
// re-verifies every testRecheck, on a clock the test sets (at testNow, an
// hour before tokDemo's expiry).
func newLiveEnv(t testing.TB, mod func(*Config)) (*testEnv, *testClock) {
	t.Helper()
	clock := newTestClock(testNow)
	e := newTestEnv(t, func(c *Config) {
		c.Hooks.Now = clock.now
		c.Live.SuperviseInterval, c.Live.RecheckInterval = testTick, testRecheck
		if mod != nil {
			mod(c)
		}
	})
	return e, clock
}

// subMsg is a client Sub; unsubMsg its Unsub.
func subMsg(controller, topic string, tid int) string {
	return `{"Controller":"` + controller + `","Topic":"` + topic + `","Action":"Sub","TransactionID":` + strconv.Itoa(tid) + `}`
}

func unsubMsg(controller, topic string, tid int) string {
	return `{"Controller":"` + controller + `","Topic":"` + topic + `","Action":"Unsub","TransactionID":` + strconv.Itoa(tid) + `}`
}

// snapshot is the fake backend's answer to subMsg.
func snapshot(controller, topic string, tid int) string {
	return `{"Controller":"` + controller + `","Topic":"` + topic + `","Action":"Publish","TransactionID":` + strconv.Itoa(tid) + `,"Data":"snapshot"}`
}

// errorMsg is the gateway's Error reply to a message with that
// Controller, Topic and TransactionID.
func errorMsg(controller, topic string, tid int, code string) string {
	return `{"Controller":"` + controller + `","Topic":"` + topic + `","Action":"Error","TransactionID":` + strconv.Itoa(tid) + `,"Data":"` + code + `"}`
}

// subscribe sends subMsg and expects the snapshot.
func subscribe(t testing.TB, c *websocket.Conn, controller, topic string, tid int) {
	t.Helper()
	if got, want := roundTrip(t, c, subMsg(controller, topic, tid)), snapshot(controller, topic, tid); got != want {
		t.Fatalf("Sub %s/%s:\n got %s\nwant %s", controller, topic, got, want)
	}
}

// gatewayUnsub reports whether msg is the gateway's own Unsub of
// controller/topic, with a reserved TransactionID.
func gatewayUnsub(msg, controller, topic string) bool {
	prefix := `{"Controller":"` + controller + `","Topic":"` + topic + `","Action":"Unsub","TransactionID":9007199254`
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok || len(rest) != 7 || rest[6] != '}' {
		return false
	}
	n, err := strconv.Atoi(rest[:6])
	return err == nil && n >= 0
}

// count is how many of the messages the backend received satisfy f.
func (b *fakeBackend) count(f func(string) bool) int {
	n := 0
	for _, m := range b.received() {
		if f(m) {
			n++
		}
	}
	return n
}

func (b *fakeBackend) countExact(msg string) int {
	return b.count(func(m string) bool { return m == msg })
}

func (b *fakeBackend) gatewayUnsubs(controller, topic string) int {
	return b.count(func(m string) bool { return gatewayUnsub(m, controller, topic) })
}

// readN reads n messages.
func readN(t testing.TB, c *websocket.Conn, n int) []string {
	t.Helper()
	got := make([]string, n)
	for i := range got {
		got[i] = readMsg(t, c)
	}
	return got
}

// sameSet fails unless got holds exactly want, in any order.
func sameSet(t testing.TB, what string, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// gauge reads the sessions gauge of st.
func (e *testEnv) gauge(st State) int {
	return e.metrics.get(func(m *fakeMetrics) int { return m.sessions[st] })
}

// lapses reads the lapses counted for reason.
func (e *testEnv) lapses(reason string) int {
	return e.metrics.get(func(m *fakeMetrics) int { return m.lapsed[reason] })
}

// noTokenLogged fails if a log entry's field carries one of the tokens.
func (e *testEnv) noTokenLogged(t testing.TB, tokens ...string) {
	t.Helper()
	for _, entry := range e.logs.All() {
		for _, f := range entry.Context {
			for _, tok := range tokens {
				if strings.Contains(f.String, tok) {
					t.Errorf("log %q carries a token", entry.Message)
				}
			}
		}
	}
}

const queryIdentify = `{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":2}`

// writePipelined writes msgs as text frames in ONE write to the socket.
func writePipelined(t testing.TB, c *websocket.Conn, msgs ...string) {
	t.Helper()
	var buf []byte
	for _, m := range msgs {
		buf = append(buf, handFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
	}
	if _, err := c.NetConn().Write(buf); err != nil {
		t.Fatalf("pipelined write: %v", err)
	}
}

// readUntil reads messages until one equals marker, returning those
// before it.
func readUntil(t testing.TB, c *websocket.Conn, marker string) []string {
	t.Helper()
	var got []string
	for range 100_000 {
		m := readMsg(t, c)
		if m == marker {
			return got
		}
		got = append(got, m)
	}
	t.Fatal("marker never came")
	return nil
}

// decodedEnv is an envelope as encoding/json reads it, names matched
// without regard to case (backendSubs).
type decodedEnv struct {
	Controller    string
	Topic         string
	Action        string
	TransactionID json.RawMessage
}

// backendSubs replays what the backend received as a backend that
// keys subscriptions by Controller and Topic would: it returns the most
// subscriptions held at once and those held at the end.
func backendSubs(msgs []string) (maxHeld int, held map[string]bool) {
	held = map[string]bool{}
	for _, m := range msgs {
		var env decodedEnv
		if json.Unmarshal([]byte(m), &env) != nil {
			continue
		}
		if env.Controller == "" {
			env.Controller = zenith.DefaultController
		}
		k := env.Controller + "/" + env.Topic
		switch env.Action {
		case zenith.ActionSub:
			held[k] = true
		case zenith.ActionUnsub:
			delete(held, k)
		}
		maxHeld = max(maxHeld, len(held))
	}
	return maxHeld, held
}

// onlySession is the gateway's only session.
func onlySession(t testing.TB, e *testEnv) *session {
	t.Helper()
	var s *session
	eventually(t, "one session", func() bool {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		if len(e.gw.sessions) != 1 {
			return false
		}
		for x := range e.gw.sessions {
			s = x
		}
		return true
	})
	return s
}

// gatedBackend is a backend whose upgrade waits for gate: a backend slow
// to accept (under load, far away). Once upgraded it echoes every message.
type gatedBackend struct {
	srv     *httptest.Server
	entered chan struct{} // one value per upgrade request
	gate    chan struct{} // closed: upgrades proceed
	once    sync.Once
}

func newGatedBackend(t testing.TB) *gatedBackend {
	b := &gatedBackend{entered: make(chan struct{}, 16), gate: make(chan struct{})}
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol, "ZenithJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.entered <- struct{}{}
		select {
		case <-b.gate:
		case <-time.After(20 * time.Second):
			http.Error(w, "timeout", http.StatusServiceUnavailable)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(typ, msg) != nil {
				return
			}
		}
	}))
	t.Cleanup(func() { b.open(); b.srv.Close() })
	return b
}

func (b *gatedBackend) open() { b.once.Do(func() { close(b.gate) }) }

func (b *gatedBackend) url() string { return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/zenith" }

// gatedVerifier wraps a fakeVerifier; a verification of hold decides
// (asks the inner verifier) at once, then waits for release before it
// answers: a verifier whose answer is in flight (a remote introspection,
// a slow database read) when the revocation lands.
type gatedVerifier struct {
	inner   *fakeVerifier
	hold    string
	decided chan struct{}
	release chan struct{}
}

func (v *gatedVerifier) VerifyAccessToken(ctx context.Context, token string) (Identity, error) {
	id, err := v.inner.VerifyAccessToken(ctx, token)
	if token == v.hold && err == nil {
		select {
		case v.decided <- struct{}{}:
		default:
		}
		select {
		case <-v.release:
		case <-ctx.Done():
		}
	}
	return id, err
}

// waitArmed waits until the supervisor has taken the signal and asked for
// the next one, then for a few more walks.
func waitArmed(t testing.TB, sig *changes) {
	t.Helper()
	eventually(t, "the supervisor re-armed after the signal", func() bool {
		sig.mu.Lock()
		defer sig.mu.Unlock()
		return sig.ch != nil
	})
	time.Sleep(10 * testTick)
}

// stillLive reports whether the session keeps its authority for 10 s:
// it sends an Echo every 100 ms until one is refused (Error/Authority, or
// a Reject pushed), and returns true, with the last echo, if none is. The
// failure it catches kept the authority for RecheckInterval (an hour);
// a loaded machine may take a few walks of the supervisor to end it.
func stillLive(t testing.TB, c *websocket.Conn) (bool, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tid := 777; time.Now().Before(deadline); tid++ {
		echo := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(tid) + `}`
		if err := c.WriteMessage(websocket.TextMessage, []byte(echo)); err != nil {
			t.Fatal(err)
		}
		for m := ""; m != echo; {
			m = readMsg(t, c)
			if strings.Contains(m, `"Result":"Reject"`) || strings.Contains(m, `"Data":"Authority"`) {
				return false, m
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true, "an Echo forwarded after 10 s"
}
