package wsauth

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestSlowClientIsClosed(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Transport.SendQueue, c.Transport.SendQueueBytes, c.Transport.WriteTimeout = 16, 64<<10, 300*time.Millisecond
	})
	c := e.dial(bearer(tokDemo))
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Blast","Data":200000}`)); err != nil {
		t.Fatal(err)
	}
	// The client reads nothing: the gateway gives it up, and the
	// backend's writes do not hold the session. (The slow-client count
	// is the signal: the session may not be tracked yet when this runs.)
	eventually(t, "the slow client to be counted", func() bool {
		return e.metrics.get(func(m *fakeMetrics) int { return m.slow }) == 1
	})
	eventually(t, "the slow client to be closed", func() bool { return e.sessions() == 0 })
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.slow }); n != 1 {
		t.Fatalf("slow clients counted: %d", n)
	}
	// Its connection is full: the close frame may not fit, and the
	// connection is dropped (1006) after WriteTimeout.
	if got := closeCode(t, c); got != websocket.ClosePolicyViolation && got != websocket.CloseAbnormalClosure && got != -1 {
		t.Fatalf("close code %d", got)
	}
}

// TestClientThatDoesNotReadPingsIsClosed: a client that keeps sending but
// never reads answers none of the gateway's pings (a pong is written only
// as its reader reaches the ping); its own messages, and pongs it sends
// unasked, do not keep it: once a ping has gone unanswered for IdleTimeout
// it is closed (1008) and counted as a slow client. Before, anything it
// sent kept it open while its backlog (in the sockets' buffers, which the
// send queue does not see) grew without end. A client that reads, slowly
// or not, answers and stays.
func TestClientThatDoesNotReadPingsIsClosed(t *testing.T) {
	t.Parallel() // its own env; 5 s of sending, mostly waiting
	e := newTestEnv(t, func(c *Config) {
		c.Transport.PingInterval, c.Transport.IdleTimeout = 200*time.Millisecond, 1500*time.Millisecond
	})
	deaf := e.dial(bearer(tokDemo))
	reader := e.dial(bearer(tokDemo))
	go func() {
		for {
			if _, _, err := reader.ReadMessage(); err != nil { // answers each ping as it reads it
				return
			}
		}
	}()
	stop := time.Now().Add(5 * time.Second)
	closedAt := time.Time{}
	for time.Now().Before(stop) {
		// Messages the backend does not answer, and pongs nobody asked for
		// shaped as a ping's payload (a random tag) would be.
		_ = deaf.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Zenith","Topic":"Quiet","Action":"Publish"}`))
		_ = deaf.WriteControl(websocket.PongMessage, []byte(strconv.FormatUint(rand.Uint64(), 16)), time.Now().Add(time.Second))
		_ = reader.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Zenith","Topic":"Quiet","Action":"Publish"}`))
		if closedAt.IsZero() && e.metrics.get(func(m *fakeMetrics) int { return m.slow }) > 0 {
			closedAt = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	if closedAt.IsZero() {
		t.Fatal("a client that answers no ping, and sends all the while, was not closed")
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.slow }); n != 1 {
		t.Fatalf("slow clients counted: %d, want 1 (the reading client must stay)", n)
	}
	if got := closeCode(t, deaf); got != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d, want 1008", got)
	}
	if n := e.sessions(); n != 1 {
		t.Fatalf("%d sessions, want the reading one", n)
	}
}
