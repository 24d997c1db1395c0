package wsauth

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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
