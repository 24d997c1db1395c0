// Command backend is wsbench's WebSocket backend: a plain gorilla server
// speaking the Zenith message container, run by wsbench in a process of its
// own so that its CPU and memory are never counted as the proxy's. It is a
// benchmark fixture, not a demo: it checks nothing and must listen on
// loopback only.
//
//	backend -listen 127.0.0.1:<port>
//
// Every request that is a WebSocket upgrade (any path; sub-protocol
// ServiceJson or ZenithJson, or none) becomes a connection with one reader
// and, while a blast runs, one writer. On it:
//
//   - {"Controller":"Market","Topic":"Bench!<id>","Action":"Sub","Data":
//     {"Size":<bytes>,"Rate":<msg/s>,"Until":<unix ns>}} starts a blast:
//     messages of exactly Size bytes, Rate per second (0: as fast as the
//     connection takes them) until the wall clock passes Until, then one
//     end message. Each message is
//     {"Controller":"Market","Topic":"Bench!<id>","Action":"Sub","Data":{"Sent":<unix ns>,"Pad":"..."}}
//     with Sent, 19 digits, stamped just before its write; the end message
//     has "Data":{"End":<messages sent>} instead. With "Payload":"market"
//     in Data (and no Size), the messages are the demo market's Security
//     updates in turn (bench/internal/marketblast: 1,024 of them, about
//     290 bytes each), Data being the update's with Sent and the update's
//     topic first:
//     {...,"Data":{"Sent":<unix ns>,"Of":"Security!BHP.ASX","High":45.12,...}}.
//   - {"Controller":"Market","Topic":"BenchIn","Action":"Publish","Data":
//     {"Sent":<unix ns>,...}} is counted: when it arrives inside the
//     window, its latency (arrival minus Sent) is kept.
//   - anything else is ignored.
//
// A connection whose client offered permessage-deflate (the gateway's
// route with backend_compression) gets every message compressed, alone.
//
// Plain HTTP, for wsbench only (never through a proxy):
//
//	POST /bench/window?from=<unix ns>&to=<unix ns>  starts a new window
//	                                                of BenchIn messages
//	GET  /bench/stats                               that window's count and
//	                                                latencies (JSON)
//	GET  /bench/conns                               open WebSocket connections
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/bench/internal/marketblast"
)

// maxSamples bounds the latencies kept per window.
const maxSamples = 1 << 21

// writeTimeout bounds one write to a client; a blast to a client that stops
// reading ends there.
const writeTimeout = 30 * time.Second

func main() {
	listen := flag.String("listen", "", "the loopback `address` to listen on, e.g. 127.0.0.1:9000")
	flag.Parse()
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(os.Stderr, "backend: -listen must be a loopback address with a port")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
	s := &server{}
	s.upgrader = websocket.Upgrader{
		Subprotocols:    []string{"ServiceJson", "ZenithJson"},
		CheckOrigin:     func(*http.Request) bool { return true },
		WriteBufferPool: &sync.Pool{}, // no write buffer held by an idle connection
		// permessage-deflate when offered (the gateway's route with
		// backend_compression): every message is then compressed, alone,
		// at gorilla's level (the standard library's flate at 1).
		EnableCompression: true,
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		_ = ln.Close()
		os.Exit(0) // hijacked connections are not tracked by srv; the exit closes them
	}()
	if err := srv.Serve(ln); err != nil && !isClosed(err) {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
}

func isClosed(err error) bool {
	return errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed)
}

// server is the backend: its upgrader, its live connections and the
// current window of BenchIn messages.
type server struct {
	upgrader websocket.Upgrader
	conns    atomic.Int64

	mu       sync.Mutex
	from, to int64 // the window, unix ns
	count    int64
	lat      []int64 // ns
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if websocket.IsWebSocketUpgrade(r) {
		s.serveWS(w, r)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/bench/window":
		from, err1 := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
		to, err2 := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
		if err1 != nil || err2 != nil || to <= from {
			http.Error(w, "bad window", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.from, s.to, s.count, s.lat = from, to, 0, make([]int64, 0, 1<<16)
		s.mu.Unlock()
	case r.Method == http.MethodGet && r.URL.Path == "/bench/stats":
		s.mu.Lock()
		body, err := json.Marshal(stats{Count: s.count, Latencies: s.lat})
		s.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	case r.Method == http.MethodGet && r.URL.Path == "/bench/conns":
		fmt.Fprintln(w, s.conns.Load())
	default:
		http.NotFound(w, r)
	}
}

// stats is the answer of /bench/stats.
type stats struct {
	Count     int64   `json:"count"`
	Latencies []int64 `json:"latencies_ns"`
}

// record counts one BenchIn message that arrived at now.
func (s *server) record(now int64, msg []byte) {
	sent, ok := sentStamp(msg)
	s.mu.Lock()
	if now >= s.from && now < s.to {
		s.count++
		if ok && len(s.lat) < maxSamples {
			s.lat = append(s.lat, now-sent)
		}
	}
	s.mu.Unlock()
}

var (
	sentKey  = []byte(`"Sent":`)
	inPrefix = []byte(`{"Controller":"Market","Topic":"BenchIn",`)
	subStart = []byte(`{"Controller":"Market","Topic":"Bench!`)
)

// sentStamp reads the 19 digits after the first "Sent":.
func sentStamp(msg []byte) (int64, bool) {
	i := bytes.Index(msg, sentKey)
	if i < 0 || len(msg) < i+len(sentKey)+19 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(msg[i+len(sentKey):i+len(sentKey)+19]), 10, 64)
	return n, err == nil
}

func (s *server) serveWS(w http.ResponseWriter, r *http.Request) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	s.conns.Add(1)
	defer s.conns.Add(-1)
	c := &conn{s: s, ws: ws}
	c.readLoop()
	_ = ws.Close() // unblocks a blast's write
	c.stopBlast()
}

// conn is one connection: its reader, and the blast's writer while one runs.
type conn struct {
	s     *server
	ws    *websocket.Conn
	stop  chan struct{} // closed to end the running blast; nil when none ran
	ended chan struct{} // closed when the blast's writer returned
}

func (c *conn) readLoop() {
	c.ws.SetReadLimit(1 << 20)
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		now := time.Now().UnixNano()
		msg := buf.Bytes()
		switch {
		case bytes.HasPrefix(msg, inPrefix):
			c.s.record(now, msg)
		case bytes.HasPrefix(msg, subStart):
			c.startBlast(msg)
		}
		if buf.Cap() > 64<<10 {
			buf = bytes.NewBuffer(make([]byte, 0, 512))
		}
	}
}

// blastRequest is the Sub that starts a blast.
type blastRequest struct {
	Controller, Topic, Action string
	Data                      struct {
		Size    int
		Rate    float64
		Until   int64
		Payload string // "market": the demo market's Security updates
	}
}

// startBlast starts the blast msg asks for, after the previous one ended.
func (c *conn) startBlast(msg []byte) {
	var req blastRequest
	if err := json.Unmarshal(msg, &req); err != nil || req.Action != "Sub" {
		return
	}
	c.stopBlast()
	var tmpls [][]byte
	var sentAt int
	var err error
	if req.Data.Payload == "market" {
		tmpls, sentAt = marketblast.Templates(req.Topic)
	} else {
		var tmpl []byte
		tmpl, sentAt, err = blastTemplate(req.Topic, req.Data.Size)
		tmpls = [][]byte{tmpl}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		return
	}
	c.stop, c.ended = make(chan struct{}), make(chan struct{})
	go c.blast(tmpls, sentAt, req.Data.Rate, time.Unix(0, req.Data.Until), req.Topic)
}

// stopBlast ends the running blast, if any, and waits for its writer.
func (c *conn) stopBlast() {
	if c.stop == nil {
		return
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.ended
}

// blast writes tmpls in turn, each stamped at sentAt, rate times a second
// (0: as fast as the connection takes them) until the wall clock passes
// until, then the end message. It is the connection's only writer while
// it runs.
func (c *conn) blast(tmpls [][]byte, sentAt int, rate float64, until time.Time, topic string) {
	defer close(c.ended)
	start := time.Now()
	var sent int64
	for n := 0; ; n++ {
		if n&63 == 0 {
			select {
			case <-c.stop:
				return
			default:
			}
		}
		now := time.Now()
		if !now.Before(until) {
			break
		}
		if rate > 0 {
			// Messages due by now; sleep until the next one is due.
			due := int64(now.Sub(start).Seconds()*rate) + 1
			if sent >= due {
				next := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
				time.Sleep(max(next.Sub(now), 20*time.Microsecond))
				continue
			}
		}
		tmpl := tmpls[n%len(tmpls)]
		strconv.AppendInt(tmpl[:sentAt], now.UnixNano(), 10)
		_ = c.ws.SetWriteDeadline(now.Add(writeTimeout))
		if err := c.ws.WriteMessage(websocket.TextMessage, tmpl); err != nil {
			return
		}
		sent++
	}
	end := fmt.Sprintf(`{"Controller":"Market","Topic":%q,"Action":"Sub","Data":{"End":%d}}`, topic, sent)
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	_ = c.ws.WriteMessage(websocket.TextMessage, []byte(end))
}

// blastTemplate is a blast message of exactly size bytes for topic, and the
// offset of its Sent stamp (19 digits, a placeholder until stamped).
func blastTemplate(topic string, size int) ([]byte, int, error) {
	head := fmt.Sprintf(`{"Controller":"Market","Topic":%q,"Action":"Sub","Data":{"Sent":`, topic)
	const stamp = "1000000000000000000" // 19 digits, as every unix ns time until 2286
	mid, tail := `,"Pad":"`, `"}}`
	pad := size - len(head) - len(stamp) - len(mid) - len(tail)
	if pad < 0 || size > 1<<20 {
		return nil, 0, fmt.Errorf("blast size %d out of range", size)
	}
	b := make([]byte, 0, size)
	b = append(b, head...)
	b = append(b, stamp...)
	b = append(b, mid...)
	b = append(b, padding(pad)...)
	b = append(b, tail...)
	return b, len(head), nil
}

// padding is n bytes of pseudo-random letters and digits, the same for
// every run: text that permessage-deflate barely compresses (about 14% at
// best, by its letters' code lengths; flate's levels 1 to 5 give it up as
// incompressible), unlike market data (the "market" payload).
func padding(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x%uint32(len(alphabet))]
	}
	return b
}
