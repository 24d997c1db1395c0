package marketdata

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkFanout measures the Market/Security fan-out: one symbol's
// updates to N subscribed clients, next to a baseline from the same run:
// the same bytes written with WriteMessage to N raw gorilla connections,
// each by its own goroutine signalled once per tick (as the server's
// writers get one message per tick), with no market, encoding, queue
// policy or write deadline. One op is one tick: one message to each
// client. It reports
//
//	ns/op           the fan-out's wall time per tick
//	msgs/s          the fan-out's rate: market step, encoding, queueing, writes
//	raw-msgs/s      the baseline's rate
//	ratio           msgs/s / raw-msgs/s: 1 would mean the server costs
//	                nothing beyond the WebSocket writes
//	cpu-ns/msg      process CPU (getrusage) per message of the fan-out
//	raw-cpu-ns/msg  the same for the baseline
//	cpu-ratio       raw-cpu-ns/msg / cpu-ns/msg: the ratio had both sides
//	                had the same CPU; it suffers far less than the wall
//	                ratio when other processes take the cores
//
// Both sides go in bursts of half the send queue, waiting after each until
// every client has read every message, so the server never closes a
// client for falling behind. The two sides take turns, a burst each, the
// first in turn alternating, so that both see the same load from whatever
// else runs. The clients (gorilla, one reader goroutine each) run in the
// same process and take CPU from both sides alike; the CPU figures count
// them too, so their share pulls both ratios toward 1.
//
//	go test -run XXX -bench Fanout -benchtime 2s -count 3 ./examples/marketdata
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchFanout(b, n) })
	}
}

func benchFanout(b *testing.B, n int) {
	burst := DefaultSendQueue / 2

	// The server: n subscribers of BHP. One tick gives the sample message
	// that the baseline writes.
	s, err := New(Config{TickInterval: time.Hour}) // ticks only by market.step below
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer s.Close()
	subscribers := make([]*websocket.Conn, n)
	for i := range subscribers {
		ws := benchDial(b, wsURL(srv, ""))
		defer ws.Close()
		if err := ws.WriteMessage(websocket.TextMessage,
			[]byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","Confirm":true}`)); err != nil {
			b.Fatal(err)
		}
		for range 2 { // confirmation, snapshot
			if _, _, err := ws.ReadMessage(); err != nil {
				b.Fatal(err)
			}
		}
		subscribers[i] = ws
	}
	s.market.step()
	var sample []byte
	for _, ws := range subscribers {
		if _, sample, err = ws.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
	ours := newCounter()
	for _, ws := range subscribers {
		go ours.read(ws)
	}

	// The baseline: n raw connections, each written by its own goroutine
	// that gets a signal per tick, as the server's writers get a message.
	writers := make(chan chan struct{}, n)
	rawSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ticks := make(chan struct{}, burst)
		writers <- ticks
		for range ticks {
			if err := ws.WriteMessage(websocket.TextMessage, sample); err != nil {
				return
			}
		}
	}))
	defer rawSrv.Close()
	raw := newCounter()
	rawTicks := make([]chan struct{}, n)
	for i := range rawTicks {
		ws := benchDial(b, "ws"+rawSrv.URL[len("http"):])
		defer ws.Close()
		go raw.read(ws)
		rawTicks[i] = <-writers
	}
	defer func() {
		for _, ch := range rawTicks {
			close(ch)
		}
	}()

	// The two sides take turns, a burst each, the first in turn
	// alternating, so that both see the same load from whatever else the
	// machine runs.
	fireOurs := func(k int) {
		for range k {
			s.market.step()
		}
	}
	fireRaw := func(k int) {
		for range k {
			for _, ch := range rawTicks {
				ch <- struct{}{}
			}
		}
	}
	var oursSide, rawSide cost
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		k := min(burst, b.N-sent)
		if sent/burst%2 == 0 {
			oursSide.add(ours.deliver(b, n, k, fireOurs))
			rawSide.add(raw.deliver(b, n, k, fireRaw))
		} else {
			rawSide.add(raw.deliver(b, n, k, fireRaw))
			oursSide.add(ours.deliver(b, n, k, fireOurs))
		}
		sent += k
	}
	b.StopTimer()

	msgs := float64(n * b.N)
	b.ReportMetric(float64(oursSide.wall.Nanoseconds())/float64(b.N), "ns/op") // the fan-out's alone
	b.ReportMetric(msgs/oursSide.wall.Seconds(), "msgs/s")
	b.ReportMetric(msgs/rawSide.wall.Seconds(), "raw-msgs/s")
	b.ReportMetric(rawSide.wall.Seconds()/oursSide.wall.Seconds(), "ratio")
	if oursSide.cpu > 0 && rawSide.cpu > 0 {
		b.ReportMetric(float64(oursSide.cpu.Nanoseconds())/msgs, "cpu-ns/msg")
		b.ReportMetric(float64(rawSide.cpu.Nanoseconds())/msgs, "raw-cpu-ns/msg")
		b.ReportMetric(rawSide.cpu.Seconds()/oursSide.cpu.Seconds(), "cpu-ratio")
	}
	b.ReportMetric(float64(len(sample)), "bytes/msg")
}

// cost is the time one side of the benchmark took: on the wall clock,
// and in CPU time of the whole process (clients included).
type cost struct{ wall, cpu time.Duration }

func (c *cost) add(d cost) {
	c.wall += d.wall
	c.cpu += d.cpu
}

func benchDial(b *testing.B, url string) *websocket.Conn {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	return ws
}

// counter counts the messages its clients read and signals when the count
// reaches a target.
type counter struct {
	read_   atomic.Int64
	target  atomic.Int64
	reached chan struct{}
}

func newCounter() *counter { return &counter{reached: make(chan struct{}, 1)} }

// read counts ws's messages until it fails.
func (c *counter) read(ws *websocket.Conn) {
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
		if c.read_.Add(1) == c.target.Load() {
			c.reached <- struct{}{}
		}
	}
}

// deliver calls fire(k), which must send k ticks, each a message to each
// of n clients, and waits until the clients have read them all. It returns
// the time taken.
func (c *counter) deliver(b *testing.B, n, k int, fire func(k int)) cost {
	start, startCPU := time.Now(), cpuTime()
	c.target.Store(c.read_.Load() + int64(n*k))
	fire(k)
	select {
	case <-c.reached:
	case <-time.After(wait):
		b.Fatalf("%d of %d messages read after %v", c.read_.Load(), c.target.Load(), wait)
	}
	return cost{wall: time.Since(start), cpu: cpuTime() - startCPU}
}
