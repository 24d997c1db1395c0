//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// The slow-reader measurement (-slow-readers): what clients that do not read
// cost the gateway, with the backend ticking every millisecond.
const (
	sendQueueBytes = 4 << 20 // the gateway's send_queue_bytes (its default, set explicitly)
	maxMessageSize = 1 << 20 // its max_message_bytes (likewise)
	rssAllowance   = 16 << 20
)

// slowReaders runs readers reading sessions, then senders clients that send
// Sub messages with topics near max_message_bytes (which the backend answers
// with Errors that echo them) and never read, and silent clients that
// subscribe to every security and never read again. It prints the gateway's
// RSS before and at its peak during the attack against the bound
// senders × send_queue_bytes + 16 MiB, how each attacking session ended (the
// gateway's slow-client count), and the ticks the readers missed (each
// security's NumberOfTrades goes up by one a tick: a gap is a missed tick).
func slowReaders(o options) error {
	in, err := setup(o, "\t\ttick_interval 1ms\n",
		fmt.Sprintf("\t\tsend_queue_bytes %d\n\t\tmax_message_bytes %d\n", sendQueueBytes, maxMessageSize))
	if err != nil {
		return err
	}
	defer in.close()
	m := in.m
	r := &runState{base: in.base, ws: in.ws, ends: map[string]int{}}
	fmt.Printf("slow readers: %d reading sessions, %d clients sending %d-byte Subs without reading, %d silent; backend tick 1 ms; gatehouse pid %d\n",
		o.readers, o.senders, maxMessageSize-256, o.silent, m.pid)
	time.Sleep(2 * time.Second)
	m.collect()
	idle := m.sample()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rs readerStats
	var rwg sync.WaitGroup
	for i := range o.readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rs.read(ctx, r, securities[i%len(securities)])
		}()
	}
	time.Sleep(10 * time.Second) // the readers settle
	if n := rs.open.Load(); n != int64(o.readers) {
		return fmt.Errorf("%d of %d readers are connected", n, o.readers)
	}
	m.collect()
	before := m.sample()
	slowBefore := m.counter("gatehouse_ws_slow_clients_total")
	fmt.Printf("gateway RSS %s idle, %s with the readers (heap in use %s); ticks so far %d, missed %d\n",
		mib(idle.rss), mib(before.rss), mib(before.heap), rs.ticks.Load(), rs.missed.Load())

	peak, peakHeap := atomic.Int64{}, atomic.Int64{}
	peak.Store(int64(before.rss))
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-sampling:
				return
			case <-t.C:
				if v := int64(m.rss()); v > peak.Load() {
					peak.Store(v)
				}
				if i%25 == 0 { // every half second: the heap, and with -keep a profile
					if h := int64(m.sample().heap); h > peakHeap.Load() {
						peakHeap.Store(h)
					}
					if o.keepDir && i < 25*40 {
						m.profileTo(filepath.Join(in.dir, fmt.Sprintf("attack-heap-%02d.pprof", i/25)), "heap")
					}
				}
			}
		}
	}()

	start := time.Now()
	ends := make([]string, o.senders+o.silent)
	var awg sync.WaitGroup
	conns := make([]*websocket.Conn, o.senders+o.silent)
	for i := range conns {
		c, err := dialSession(ctx, r)
		if err != nil {
			return fmt.Errorf("attacker %d: %v", i, err)
		}
		conns[i] = c
		defer c.Close()
	}
	topic := "Security!" + strings.Repeat("X", maxMessageSize-256)
	for i, c := range conns {
		awg.Add(1)
		go func() {
			defer awg.Done()
			if i < o.senders {
				for k := range 200 {
					_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
					if c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"`+topic+`","Action":"Sub","TransactionID":`+strconv.Itoa(k+1)+`}`)) != nil {
						return
					}
				}
				return
			}
			for k, code := range securities {
				_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Security!`+code+`.ASX","Action":"Sub","TransactionID":`+strconv.Itoa(k+1)+`}`))
			}
		}()
	}
	awg.Wait()
	// Every attacker is closed by a bound: the senders' writes fail once it
	// closes them; the silent ones are seen in the gateway's gauge.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && m.sample().sessions > float64(o.readers) {
		time.Sleep(100 * time.Millisecond)
	}
	closedIn := time.Since(start)
	after := m.sample()
	slowAfter := m.counter("gatehouse_ws_slow_clients_total")
	close(sampling)
	<-sampled
	// What each attacker reads now: what the socket still held, then the close
	// frame if the gateway could write it (a client that reads nothing has a
	// full receive window: the frame may never fit).
	for i, c := range conns {
		ends[i] = readToEnd(c)
	}
	time.Sleep(2 * time.Second)
	cancel()
	rwg.Wait()

	rise := float64(peak.Load()) - before.rss
	bound := float64(o.senders*sendQueueBytes + rssAllowance)
	fmt.Printf("attack: %d attacking sessions closed %v after they started (gauge %0.f sessions left)\n",
		o.senders+o.silent, closedIn.Round(100*time.Millisecond), after.sessions)
	fmt.Printf("gateway RSS peak %s: +%s over the readers' %s; bound %d × send_queue_bytes + 16 MiB = %s: %s\n",
		mib(float64(peak.Load())), mib(rise), mib(before.rss), o.senders, mib(bound), map[bool]string{true: "met", false: "NOT MET"}[rise <= bound])
	fmt.Printf("gateway heap in use at its peak %s; after the attack RSS %s, heap in use %s\n", mib(float64(peakHeap.Load())), mib(after.rss), mib(after.heap))
	if o.keepDir {
		m.profileTo(filepath.Join(in.dir, "attack-allocs.pprof"), "allocs")
	}
	fmt.Printf("gatehouse_ws_slow_clients_total: +%.0f (want %d)\n", slowAfter-slowBefore, o.senders+o.silent)
	count := map[string]int{}
	for _, e := range ends {
		count[e]++
	}
	for e, n := range count {
		fmt.Printf("  attackers that %s: %d\n", e, n)
	}
	fmt.Printf("readers: %d ticks, %d missed, %d readers ended before the run did (%s)\n",
		rs.ticks.Load(), rs.missed.Load(), rs.dropped.Load(), r.endsText())
	fmt.Printf("gatehouse restarts: %d\n", map[bool]int{true: 0, false: 1}[in.gw.alive()])
	return nil
}

// readerStats counts what the reading sessions saw.
type readerStats struct {
	open    atomic.Int64 // readers subscribed and reading
	ticks   atomic.Int64 // updates received
	missed  atomic.Int64 // updates skipped: NumberOfTrades went up by more than one
	dropped atomic.Int64 // readers whose session ended before the run did
}

// read is one reading session, subscribed to code, until ctx ends.
func (rs *readerStats) read(ctx context.Context, r *runState, code string) {
	c, err := dialSession(ctx, r)
	if err != nil {
		rs.dropped.Add(1)
		r.ended("reader dial failed: "+err.Error(), false)
		return
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() {
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	})
	defer stop()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Security!`+code+`.ASX","Action":"Sub","TransactionID":1}`)); err != nil {
		rs.dropped.Add(1)
		return
	}
	rs.open.Add(1)
	defer rs.open.Add(-1)
	last := int64(-1)
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil {
			if ctx.Err() == nil {
				rs.dropped.Add(1)
				cause, _ := r.cause(err, kindHealthy)
				r.ended(cause, false)
			}
			return
		}
		n, ok := trades(msg)
		if !ok {
			continue
		}
		if last >= 0 {
			rs.ticks.Add(1)
			if n > last+1 {
				rs.missed.Add(n - last - 1)
			}
		}
		last = n
	}
}

// trades is a security message's NumberOfTrades.
func trades(msg []byte) (int64, bool) {
	const key = `"NumberOfTrades":`
	i := strings.Index(string(msg), key)
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len(key):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// dialSession opens a session authenticated on the upgrade.
func dialSession(ctx context.Context, r *runState) (*websocket.Conn, error) {
	tok, err := r.token()
	if err != nil {
		return nil, err
	}
	d := websocket.Dialer{Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 30 * time.Second}
	c, _, err := d.DialContext(ctx, r.ws, http.Header{"Authorization": {"Bearer " + tok}})
	return c, err
}

// readToEnd reads a socket to its end, 30 s at most: how it ended.
func readToEnd(c *websocket.Conn) string {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
			return "read their backlog, then close " + strconv.Itoa(ce.Code)
		}
		cause, _ := (&runState{}).cause(err, kindHealthy)
		return "read their backlog, then " + cause
	}
}
