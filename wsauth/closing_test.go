package wsauth

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestRepliesPrecedeTheCloseFrame(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Auth.MaxMessages = 1 })
	c := e.dial(nil)
	// The first message gets its Error reply, the second closes the
	// socket: the reply, queued first, must reach the client before the
	// close frame. The client writes on after the close, unread.
	msg := []byte(`{"Controller":"Market","Topic":"Depth","Data":"` + strings.Repeat("x", 4000) + `"}`)
	for range 50 {
		if c.WriteMessage(websocket.TextMessage, msg) != nil {
			break
		}
	}
	if got := readMsg(t, c); !strings.Contains(got, `"Data":"Authority"`) {
		t.Fatalf("got %s", got)
	}
	if got := closeCode(t, c); got != websocket.ClosePolicyViolation {
		t.Fatalf("close code %d", got)
	}
}

func TestClientCloseReachesTheBackend(t *testing.T) {
	for _, tt := range []struct{ client, backend int }{
		{websocket.CloseNormalClosure, websocket.CloseNormalClosure},
		{websocket.CloseGoingAway, websocket.CloseGoingAway},
	} {
		t.Run(strconv.Itoa(tt.client), func(t *testing.T) {
			e := newTestEnv(t, nil)
			c := e.dial(bearer(tokDemo))
			roundTrip(t, c, `{"Controller":"Market","Topic":"Echo"}`)
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(tt.client, ""), time.Now().Add(time.Second))
			if got := closeCode(t, c); got != tt.client {
				t.Fatalf("the gateway answered %d", got)
			}
			eventually(t, "the backend leg to close", func() bool {
				e.backend.mu.Lock()
				defer e.backend.mu.Unlock()
				return e.backend.closed == 1
			})
			e.backend.mu.Lock()
			defer e.backend.mu.Unlock()
			if len(e.backend.closeCodes) != 1 || e.backend.closeCodes[0] != tt.backend {
				t.Fatalf("backend close codes %v, want [%d]", e.backend.closeCodes, tt.backend)
			}
		})
	}
}

func TestClientHeadersDoNotReachTheBackend(t *testing.T) {
	e := newTestEnv(t, nil)
	h := bearer(tokDemo)
	h.Set("X-User-Id", "u-admin")
	h.Set("Cookie", "session=1")
	c := e.dial(h)
	roundTrip(t, c, `{"Controller":"Market","Topic":"Echo"}`)
	e.backend.mu.Lock()
	got := e.backend.headers[0]
	e.backend.mu.Unlock()
	if v := got.Values("X-User-Id"); len(v) != 1 || v[0] != "u-demo" {
		t.Fatalf("X-User-Id %q", v)
	}
	if got.Get("Cookie") != "" || got.Get("Authorization") != "" {
		t.Fatal("a client header reached the backend")
	}
}

func TestHeaderAuthBackendDown(t *testing.T) {
	e := newTestEnv(t, nil)
	e.backend.mu.Lock()
	e.backend.refuse = http.StatusServiceUnavailable
	e.backend.mu.Unlock()
	c := e.dial(bearer(tokDemo))
	if got := closeCode(t, c); got != websocket.CloseTryAgainLater {
		t.Fatalf("close code %d", got)
	}
	eventually(t, "the session to end", func() bool { return e.sessions() == 0 })
	if n := e.gw.places.unauth.Load(); n != 0 {
		t.Fatalf("unauthenticated count %d", n)
	}
}

func TestBackendCloses(t *testing.T) {
	for _, tt := range []struct{ backend, client int }{
		{websocket.CloseNormalClosure, websocket.CloseNormalClosure},
		{websocket.CloseGoingAway, websocket.CloseGoingAway},
		{websocket.CloseServiceRestart, websocket.CloseServiceRestart},
		{4000, 4000},
	} {
		t.Run(strconv.Itoa(tt.backend), func(t *testing.T) {
			e := newTestEnv(t, nil)
			c := e.dial(bearer(tokDemo))
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Close","Data":`+strconv.Itoa(tt.backend)+`}`))
			// What the backend sent before closing arrives first.
			if got := readMsg(t, c); got != `{"Controller":"Zenith","Topic":"Bye"}` {
				t.Fatalf("got %s", got)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _, err := c.ReadMessage()
			ce, ok := err.(*websocket.CloseError)
			if !ok || ce.Code != tt.client || ce.Text != "" {
				t.Fatalf("got %v, want close %d without the backend's text", err, tt.client)
			}
			eventually(t, "the session to end", func() bool { return e.sessions() == 0 })
		})
	}
}

func TestShutdown(t *testing.T) {
	for _, code := range []int{websocket.CloseGoingAway, websocket.CloseServiceRestart} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			e := newTestEnv(t, nil)
			a := e.dial(bearer(tokDemo))
			u := e.dial(nil)
			roundTrip(t, a, `{"Controller":"Market","Topic":"Echo"}`)
			done := make(chan struct{})
			go func() {
				// The clients answer the close while Shutdown waits.
				defer close(done)
				for _, c := range []*websocket.Conn{a, u} {
					if got := closeCode(t, c); got != code {
						t.Errorf("close code %d, want %d", got, code)
					}
				}
			}()
			e.gw.Shutdown(code)
			<-done
			if n := e.sessions(); n != 0 {
				t.Fatalf("%d sessions left", n)
			}
			if _, resp, err := e.tryDial(nil, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("upgrade after Shutdown: %v %v", resp, err)
			}
		})
	}
}

// TestCloseFrameSurvivesUnreadInput: a client whose message is too big has
// more bytes in flight when the gateway closes; it still reads the close
// frame with 1009. (On loopback the frame is sent before the gateway
// closes the socket, so this passes without linger too: a reset loses only
// what was not yet sent. linger's own case is a client whose receive
// window is full, which needs a slow network to show.)
func TestCloseFrameSurvivesUnreadInput(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Transport.MaxMessageBytes = 64 << 10 })
	c := e.dial(nil)
	nc := c.NetConn()
	// One frame header announcing 1 MiB of text, then its payload: the
	// gateway refuses at the header (over the limit) and the payload is
	// still arriving.
	hdr := []byte{0x81, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0}
	if _, err := nc.Write(hdr); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1<<20)
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = nc.Write(payload)
	}()
	time.Sleep(300 * time.Millisecond) // the gateway closes meanwhile
	if got := closeCode(t, c); got != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d, want %d (1009)", got, websocket.CloseMessageTooBig)
	}
	<-written
}

// TestSlowReaderReachesTheCloseFrame: a client still reading a backlog
// when the gateway closes (the backend went away) is behind its close
// frame for longer than CloseGrace. The session ends, but the socket
// lingers: half-closed, its input discarded, so the pongs the client
// writes as it reads the pings in its backlog do not meet a reset, and it
// reads every message, then the close frame with 1001. Then the client
// closes and the lingering ends. (With the socket closed at once, the
// client's second pong fails with EPIPE, which gorilla's reader returns:
// the soak's slow readers saw exactly that at a backend restart.)
func TestSlowReaderReachesTheCloseFrame(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Transport.CloseGrace = 200 * time.Millisecond
		c.Transport.PingInterval = 50 * time.Millisecond
		c.Transport.IdleTimeout = time.Minute
	})
	c := e.dial(bearer(tokDemo))
	time.Sleep(300 * time.Millisecond) // pings wait in the client's backlog
	for _, m := range []string{`{"Controller":"Market","Topic":"Blast","Data":200}`, `{"Controller":"Market","Topic":"Close","Data":1001}`} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the session to end", func() bool { return e.sessions() == 0 })
	time.Sleep(300 * time.Millisecond) // well past CloseGrace
	if n := e.gw.lingeringSockets(); n != 1 {
		t.Fatalf("%d sockets lingering, want 1", n)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	blasts := 0
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.CloseGoingAway {
				t.Fatalf("after %d of 200 messages: %v, want the close frame with 1001", blasts, err)
			}
			break
		}
		if strings.Contains(string(msg), "Security!BHP.ASX") {
			blasts++
		}
		time.Sleep(time.Millisecond) // a slow reader: its pongs go out one by one
	}
	if blasts != 200 {
		t.Fatalf("%d of 200 messages before the close frame", blasts)
	}
	c.Close()
	eventually(t, "the lingering socket to close", func() bool { return e.gw.lingeringSockets() == 0 })
}

// TestShutdownEndsLingeringSockets: a socket lingering after an unanswered
// close (a client that reads nothing) is closed by Shutdown at once, and
// its goroutine ends.
func TestShutdownEndsLingeringSockets(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Transport.CloseGrace = 100 * time.Millisecond
		c.Transport.CloseLinger = time.Hour
	})
	before := goroutines()
	c := e.dial(bearer(tokDemo))
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Close","Data":1001}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the socket to linger", func() bool { return e.sessions() == 0 && e.gw.lingeringSockets() == 1 })
	start := time.Now()
	e.gw.Shutdown(websocket.CloseGoingAway)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	if n := e.gw.lingeringSockets(); n != 0 {
		t.Fatalf("%d sockets lingering after Shutdown", n)
	}
	if got := closeCode(t, c); got != websocket.CloseGoingAway {
		t.Fatalf("close code %d, want 1001", got)
	}
	c.Close()
	eventually(t, "the goroutines to end", func() bool { return goroutines() <= before })
}

// TestTeardownClosesAStubbornBackend: when the client leaves, the gateway
// closes the backend leg's connection itself; a backend that never answers
// the close frame (nor closes) cannot keep the session, and its backend
// reader, alive.
func TestTeardownClosesAStubbornBackend(t *testing.T) {
	ended := make(chan struct{})
	conns := make(chan net.Conn, 1)
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol}}
	stubborn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conns <- c.NetConn()
		// Reads bytes, never frames: no close answer, no close.
		_, _ = io.Copy(io.Discard, c.NetConn())
		close(ended)
	}))
	defer stubborn.Close()
	e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{"ws" + strings.TrimPrefix(stubborn.URL, "http") + "/"} })
	c := e.dial(bearer(tokDemo))
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Echo"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		(<-conns).Close() // lets the cleanup's Shutdown return
		t.Fatal("the backend leg is still open after the client left")
	}
	eventually(t, "the session to end", func() bool {
		return e.metrics.get(func(m *fakeMetrics) int { return m.sessions[StateAuthenticated] }) == 0
	})
}

// TestTeardownDoesNotWaitForAStuckWrite: a client that reads nothing while
// the backend floods it leaves the backend reader's write to it stuck (in
// its idle hook, inside its read of the backend socket, which a Close of
// that socket waits for). When the client then shuts its sending side,
// the session ends (no close handshake: the client is gone); teardown
// aborts the client leg's writes before it closes the backend leg, so the
// session ends at once, not at the stuck write's timeout.
func TestTeardownDoesNotWaitForAStuckWrite(t *testing.T) {
	const writeTimeout = 6 * time.Second
	e := newTestEnv(t, func(c *Config) {
		c.Transport.WriteTimeout = writeTimeout
	})
	c := e.dial(bearer(tokDemo))
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Blast","Data":2000000}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the session to start", func() bool { return e.sessions() == 1 })
	time.Sleep(500 * time.Millisecond) // the socket buffers fill: the write is stuck
	start := time.Now()
	if err := c.NetConn().(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * writeTimeout)
	for e.sessions() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(start); took >= writeTimeout-time.Second {
		t.Fatalf("the session ended after %v: teardown waited for the stuck write (timeout %v)", took, writeTimeout)
	}
	c.Close()
}

// TestGiveUpStillClosesTheBackend: a client given up (it reads nothing
// and the backend floods it) ends the session, and the backend leg still
// gets its close frame (1001): giving up the client fails no write to the
// backend.
func TestGiveUpStillClosesTheBackend(t *testing.T) {
	codes := make(chan int, 1)
	up := websocket.Upgrader{Subprotocols: []string{DefaultSubprotocol}}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		payload := []byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Publish","Data":{"Last":37.48}}`)
		go func() { // floods, and reads on
			for c.WriteMessage(websocket.TextMessage, payload) == nil {
			}
		}()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				code := -1
				if ce, ok := err.(*websocket.CloseError); ok {
					code = ce.Code
				}
				codes <- code
				return
			}
		}
	}))
	defer backend.Close()
	e := newTestEnv(t, func(c *Config) {
		c.Backend.Upstreams = []string{"ws" + strings.TrimPrefix(backend.URL, "http") + "/"}
		c.Transport.SendQueue, c.Transport.SendQueueBytes, c.Transport.WriteTimeout = 16, 64<<10, 300*time.Millisecond
	})
	_ = e.dial(bearer(tokDemo)) // reads nothing
	eventually(t, "the slow client to be counted", func() bool {
		return e.metrics.get(func(m *fakeMetrics) int { return m.slow }) == 1
	})
	select {
	case code := <-codes:
		if code != websocket.CloseGoingAway {
			t.Fatalf("the backend got close code %d, want 1001", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the backend leg was not closed")
	}
}
