package wsauth

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func TestHostileFrames(t *testing.T) {
	const deserialise = `"Data":"Data.Deserialise"}`
	big := `{"Controller":"Market","Topic":"Echo","Data":"` + strings.Repeat("a", DefaultMaxMessageBytes) + `"}`
	tests := []struct {
		name     string
		typ      int
		msg      string
		compress bool
		reply    string // the Error reply's ending, or "" when the socket closes
		code     int
	}{
		{name: "invalid JSON", msg: `{"Controller":"Market",`, reply: deserialise},
		{name: "not an object", msg: `[1]`, reply: deserialise},
		{name: "controller in another case", msg: `{"controller":"Trading","Topic":"PlaceOrder"}`, reply: deserialise},
		{name: "escaped key", msg: `{"Controller":"Market","Contr\u006fller":"Trading","Topic":"PlaceOrder"}`, reply: deserialise},
		{name: "escaped controller value is decoded before the policy", msg: `{"Controller":"Tr\u0061ding","Topic":"Place\u004frder","TransactionID":4}`,
			reply: `"Controller":"Trading","Topic":"PlaceOrder","Action":"Error","TransactionID":4,"Data":"Authority"}`},
		{name: "default controller applied before the policy", msg: `{"Topic":"PlaceOrder"}`, reply: `"Data":"Authority"}`},
		{name: "non-ASCII key", msg: `{"Controller":"Market","Topic":"Echo","ſ":1}`, reply: deserialise},
		{name: "duplicate key", msg: `{"Controller":"Market","Topic":"Echo","Controller":"Trading"}`, reply: deserialise},
		{name: "trailing bytes", msg: `{"Controller":"Market","Topic":"Echo"} {"Controller":"Trading"}`, reply: deserialise},
		{name: "binary frame", typ: websocket.BinaryMessage, msg: `{"Controller":"Market","Topic":"Echo"}`, code: websocket.CloseUnsupportedData},
		{name: "invalid UTF-8", msg: "{\"Controller\":\"Market\",\"Topic\":\"Echo\xff\"}", code: websocket.CloseInvalidFramePayloadData},
		{name: "oversized", msg: big, code: websocket.CloseMessageTooBig},
		{name: "compressed bomb", msg: big + strings.Repeat(" ", 4<<20), compress: true, code: websocket.CloseMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, EnableCompression: tt.compress}
			c, resp, err := e.tryDial(bearer(tokDemo), d)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if ext := resp.Header.Get("Sec-Websocket-Extensions"); tt.compress != strings.Contains(ext, "permessage-deflate") {
				t.Fatalf("extensions %q: compression not as asked", ext)
			}
			typ := tt.typ
			if typ == 0 {
				typ = websocket.TextMessage
			}
			if tt.compress {
				c.EnableWriteCompression(true)
			}
			if err := c.WriteMessage(typ, []byte(tt.msg)); err != nil {
				t.Fatal(err)
			}
			if tt.reply != "" {
				if got := readMsg(t, c); !strings.HasSuffix(got, tt.reply) {
					t.Fatalf("reply %s", got)
				}
				echo := `{"Controller":"Market","Topic":"Echo"}`
				if got := roundTrip(t, c, echo); got != echo {
					t.Fatalf("the socket did not stay usable: %s", got)
				}
			} else if got := closeCode(t, c); got != tt.code {
				t.Fatalf("close code %d, want %d", got, tt.code)
			}
			for _, m := range e.backend.received() {
				if m != `{"Controller":"Market","Topic":"Echo"}` {
					t.Fatalf("the backend received a hostile message: %.80q", m)
				}
			}
		})
	}
}

func TestCompressedBombIsSmallOnTheWire(t *testing.T) {
	// The bomb above closes with 1009 although gorilla's read limit, on
	// wire bytes, is never reached: its compressed form is tiny.
	var buf bytes.Buffer
	msg := `{"Data":"` + strings.Repeat(" ", 5<<20) + `"}`
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write([]byte(msg))
	_ = w.Close()
	if buf.Len() > DefaultMaxMessageBytes/8 {
		t.Fatalf("compressed bomb is %d bytes", buf.Len())
	}
}

func TestAuthLimits(t *testing.T) {
	t.Run("too many messages", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) { c.Auth.MaxMessages = 3 })
		c := e.dial(nil)
		for i := range 3 {
			roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":`+strconv.Itoa(i)+`,"Data":{"Provider":"Bearer","AccessToken":"x"}}`)
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"QueryIdentify"}`))
		if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
			t.Fatalf("close code %d", got)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 200 * time.Millisecond })
		c := e.dial(nil)
		if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
			t.Fatalf("close code %d", got)
		}
	})
	t.Run("deadline during a hung verification", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) { c.Auth.Timeout = 200 * time.Millisecond })
		c := e.dial(nil)
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Auth","Topic":"AuthToken","Data":{"Provider":"Bearer","AccessToken":"`+tokHang+`"}}`))
		if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
			t.Fatalf("close code %d", got)
		}
	})
	t.Run("unauthenticated bound", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) { c.Auth.MaxUnauthenticated = 1 })
		c := e.dial(nil)
		if _, resp, err := e.tryDial(nil, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("second unauthenticated socket: %v %v", resp, err)
		}
		// Header-authenticated sockets are not bound by it.
		e.dial(bearer(tokDemo))
		// Authenticating frees the place (the reply may come a moment
		// before the count drops).
		roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","Data":{"Provider":"Bearer","AccessToken":"`+tokDemo+`"}}`)
		eventually(t, "the place to free", func() bool { return e.gw.places.unauth.Load() == 0 })
		e.dial(nil)
	})
	t.Run("idle", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) {
			c.Transport.PingInterval, c.Transport.IdleTimeout = 50*time.Millisecond, 300*time.Millisecond
		})
		c := e.dial(bearer(tokDemo))
		// A client that answers no ping is silent.
		c.SetPingHandler(func(string) error { return nil })
		start := time.Now()
		if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
			t.Fatalf("close code %d", got)
		}
		if time.Since(start) < 250*time.Millisecond {
			t.Fatal("closed before the idle timeout")
		}
		eventually(t, "the session to end", func() bool { return e.sessions() == 0 })
	})
	t.Run("pongs keep it open", func(t *testing.T) {
		e := newTestEnv(t, func(c *Config) {
			c.Transport.PingInterval, c.Transport.IdleTimeout = 50*time.Millisecond, 300*time.Millisecond
		})
		c := e.dial(bearer(tokDemo))
		// Reading answers pings; one second is several idle periods.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, _, err := c.ReadMessage(); !isTimeout(err) {
			t.Fatalf("socket ended: %v", err)
		}
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func (e *testEnv) sessions() int {
	e.gw.mu.Lock()
	defer e.gw.mu.Unlock()
	return len(e.gw.sessions)
}

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

func TestBackendDown(t *testing.T) {
	dead := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "ws://" + addr + "/zenith"
	}
	tests := []struct {
		name    string
		mod     func(e *testEnv, c *Config)
		code    int
		relayed bool
	}{
		{"unreachable", func(_ *testEnv, c *Config) { c.Backend.Upstreams = []string{dead()} }, websocket.CloseTryAgainLater, false},
		{"refusing", nil, websocket.CloseInternalServerErr, false},
		{"failover", func(e *testEnv, c *Config) { c.Backend.Upstreams = append([]string{dead()}, c.Backend.Upstreams...) }, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *testEnv
			e = newTestEnv(t, func(c *Config) {
				if tt.mod != nil {
					tt.mod(e, c)
				}
			})
			if tt.name == "refusing" {
				e.backend.mu.Lock()
				e.backend.refuse = http.StatusForbidden
				e.backend.mu.Unlock()
			}
			c := e.dial(nil)
			msg := `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"` + tokDemo + `"}}`
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if !tt.relayed {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _, err := c.ReadMessage()
				ce, ok := err.(*websocket.CloseError)
				if !ok || ce.Code != tt.code || ce.Text != "" {
					t.Fatalf("got %v, want close %d without text", err, tt.code)
				}
				return
			}
			if got := readMsg(t, c); !strings.Contains(got, `"Result":"Success"`) {
				t.Fatalf("reply %s", got)
			}
			echo := `{"Controller":"Market","Topic":"Echo"}`
			if got := roundTrip(t, c, echo); got != echo {
				t.Fatalf("echo %s", got)
			}
		})
	}
}

func TestClientVanishes(t *testing.T) {
	e := newTestEnv(t, nil)
	// Warm up: the servers' own goroutines exist before the baseline.
	w := e.dial(bearer(tokDemo))
	roundTrip(t, w, `{"Controller":"Market","Topic":"Echo"}`)
	w.Close()
	eventually(t, "the warm-up session to end", func() bool { return e.sessions() == 0 })
	base := goroutines()

	for range 5 {
		c := e.dial(bearer(tokDemo))
		roundTrip(t, c, `{"Controller":"Market","Topic":"Echo"}`)
		_ = c.NetConn().Close() // no close frame: the client is gone
	}
	u := e.dial(nil) // and one unauthenticated
	_ = u.NetConn().Close()
	eventually(t, "every session to end", func() bool { return e.sessions() == 0 })
	eventually(t, "the backend legs to close", func() bool {
		e.backend.mu.Lock()
		defer e.backend.mu.Unlock()
		return e.backend.closed == 6
	})
	eventually(t, "goroutines back to the baseline", func() bool { return goroutines() <= base })
	if n := e.metrics.get(func(m *fakeMetrics) int {
		return m.sessions[StateAuthenticated] + m.sessions[StateUnauthenticated] + m.sessions[StateExpired]
	}); n != 0 {
		t.Fatalf("sessions gauge %d", n)
	}
	if n := e.gw.places.unauth.Load(); n != 0 {
		t.Fatalf("unauthenticated count %d", n)
	}
}

func TestFragmentedMessageIsForwardedWhole(t *testing.T) {
	e := newTestEnv(t, nil)
	// A small write buffer makes gorilla send the message in frames.
	d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, WriteBufferSize: 256}
	c, _, err := e.tryDial(bearer(tokDemo), d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := `{"Controller":"Market","Topic":"Echo","Data":"` + strings.Repeat("x", 4000) + `"}`
	w, err := c.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(msg); i += 100 {
		_, _ = w.Write([]byte(msg[i:min(i+100, len(msg))]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readMsg(t, c); got != msg {
		t.Fatalf("echo differs (%d bytes)", len(got))
	}
	if got := e.backend.received(); len(got) != 1 || got[0] != msg {
		t.Fatal("the backend did not receive the message whole")
	}
}

func TestReauthentication(t *testing.T) {
	e := newTestEnv(t, nil)
	c := e.dial(nil)
	auth := func(tok string) string {
		return roundTrip(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"`+tok+`"}}`)
	}
	state := func(st State) int { return e.metrics.get(func(m *fakeMetrics) int { return m.sessions[st] }) }
	eventually(t, "an unauthenticated session", func() bool { return state(StateUnauthenticated) == 1 })
	if got := auth(tokDemo); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("first: %s", got)
	}
	if state(StateUnauthenticated) != 0 || state(StateAuthenticated) != 1 {
		t.Fatalf("sessions by state: %d unauthenticated, %d authenticated", state(StateUnauthenticated), state(StateAuthenticated))
	}
	if got := auth(tokDemo); !strings.Contains(got, `"Result":"Success"`) {
		t.Fatalf("again: %s", got)
	}
	// Another user's token on the same socket is refused; the session
	// keeps its identity.
	if got := auth(tokTrader); !strings.Contains(got, `"Result":"Reject"`) {
		t.Fatalf("other subject: %s", got)
	}
	if got := roundTrip(t, c, `{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":2}`); !strings.Contains(got, `"UserID":"u-demo"`) {
		t.Fatalf("QueryIdentify: %s", got)
	}
	if n := e.backend.upgrades(); n != 1 {
		t.Fatalf("backend legs opened: %d", n)
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.auth["auth_token/success"]*10 + m.auth["auth_token/reject"] }); n != 21 {
		t.Fatalf("auth results counted: %d, want 2 successes and 1 reject", n)
	}
}

// TestRelayIntegrity: several sessions at once, each sending messages of
// many sizes (up to several of the legs' read and write batches, so a
// message spans socket reads and batches) without waiting, get each back
// from the backend's echo intact and in order: the batches, the pooled
// buffers and the queue never mix one message, or session, with another.
// Among them the backend sends a tiny message then one about a batch long
// (65,522 to 65,537 bytes: the largest that fit a batch, and the smallest
// written alone, after a batch with room for their length): the large
// one does not overtake the tiny one.
func TestRelayIntegrity(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Limits.Default = policy.Limits{MessagesPerSecond: 1e9, Burst: 1 << 30}
	})
	const sessions, perSession = 4, 60
	type exchange struct {
		send string
		want []string // what the backend answers, in order
	}
	const refusedTID = `"TransactionID":9007199254000001`
	const refused = `{"Controller":"Market","Topic":"Echo",` + refusedTID + `}`
	refusedErr := errorMsg("Market", "Echo", 9007199254000001, CodeSession)
	var wg sync.WaitGroup
	for k := range sessions {
		c := e.dial(bearer(tokDemo))
		var xs []exchange
		for i := range perSession {
			size := []int{10, 200, 3000, 40 << 10, 100 << 10, 70 << 10, 1}[i%7] + i
			pad := make([]byte, size)
			for j := range pad {
				pad[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[(j*7+i*13+k*31)%36]
			}
			m := `{"Controller":"Market","Topic":"Echo","TransactionID":` + strconv.Itoa(i) + `,"Data":"` + string(pad) + `"}`
			xs = append(xs, exchange{m, []string{m}})
			if i%3 == 0 {
				tiny := []string{"x", "abc", "{}"}[(i/3)%3]
				big := strings.Repeat(string(rune('a'+(i+k)%26)), []int{65522, 65523, 65530, 65535, 65536, 65537}[(i/3)%6])
				say, _ := json.Marshal([]string{tiny, big})
				// A refused message's Error, queued before the backend's
				// answers, has the client writer drain the queue as the
				// backend reader adds to them.
				xs = append(xs, exchange{refused, nil},
					exchange{`{"Controller":"Market","Topic":"Say","Data":` + string(say) + `}`, []string{tiny, big}})
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for _, x := range xs {
				if err := c.WriteMessage(websocket.TextMessage, []byte(x.send)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			errs, wantErrs := 0, 0 // the Errors read, and those queued before the next answer
			for i, x := range xs {
				if x.send == refused {
					wantErrs++
				}
				for _, want := range x.want {
					_, got, err := c.ReadMessage()
					for err == nil && string(got) == refusedErr {
						errs++ // it may come before the answers to what preceded it
						_, got, err = c.ReadMessage()
					}
					if err == nil && errs < wantErrs {
						t.Errorf("session %d, exchange %d: %d bytes %.20q… came before the Error queued ahead of it", k, i, len(got), got)
						return
					}
					if err != nil {
						t.Errorf("session %d, exchange %d: %v", k, i, err)
						return
					}
					if string(got) != want {
						t.Errorf("session %d, exchange %d: got %d bytes %.60q…, want %d bytes %.60q…", k, i, len(got), got, len(want), want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
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
