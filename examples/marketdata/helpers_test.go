package marketdata

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wait bounds every wait for a message or a state in these tests. It is
// a failure deadline, never a duration the tests rely on passing.
const wait = 10 * time.Second

// testConfig is a Config for tests: fixed clock and seed, a slow ticker
// (tests that want updates set a fast one).
func testConfig() Config {
	return Config{
		Now:          func() time.Time { return time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC) },
		TickInterval: time.Hour,
		Seed:         7,
	}
}

// start runs a Server for cfg behind an httptest.Server on loopback and
// closes both at the end of the test.
func start(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		_ = s.Close()
		srv.Close()
	})
	return s, srv
}

func wsURL(srv *httptest.Server, query string) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws" + query
}

// client is a test's WebSocket client.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

// dial connects as user (no user header when empty) with the ServiceJson
// sub-protocol.
func dial(t *testing.T, srv *httptest.Server, user string) *client {
	t.Helper()
	h := http.Header{}
	if user != "" {
		h.Set(DefaultUserIDHeader, user)
	}
	return dialWith(t, wsURL(srv, "?version=1.1"), h, &websocket.Dialer{Subprotocols: []string{SubprotocolService}})
}

func dialWith(t *testing.T, url string, h http.Header, d *websocket.Dialer) *client {
	t.Helper()
	d.HandshakeTimeout = wait
	ws, resp, err := d.Dial(url, h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return &client{t: t, ws: ws}
}

// send writes a text frame.
func (c *client) send(msg string) {
	c.t.Helper()
	_ = c.ws.SetWriteDeadline(time.Now().Add(wait))
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		c.t.Fatalf("send %s: %v", msg, err)
	}
}

// message is a message from the server.
type message struct {
	Controller    string
	Topic         string
	Action        string
	TransactionID *int64
	Confirm       bool
	Data          json.RawMessage
	raw           string
}

// next reads the next message, failing the test after wait.
func (c *client) next() message {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(wait))
	kind, raw, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("reading: %v", err)
	}
	if kind != websocket.TextMessage {
		c.t.Fatalf("frame type %d, want text", kind)
	}
	return decodeMessage(c.t, raw)
}

func decodeMessage(t *testing.T, raw []byte) message {
	t.Helper()
	var names map[string]json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		t.Fatalf("message %s: %v", raw, err)
	}
	for name := range names {
		if envelopeIndex(name) < 0 {
			t.Errorf("message %s: member %q is not an envelope name", raw, name)
		}
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("message %s: %v", raw, err)
	}
	m.raw = string(raw)
	return m
}

// nextOn reads until a message on topic, skipping others (updates of
// other subscriptions), failing after wait.
func (c *client) nextOn(topic string) message {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if m := c.next(); m.Topic == topic {
			return m
		}
	}
	c.t.Fatalf("no message on %s", topic)
	return message{}
}

// closed reads until the connection fails and returns the close frame's
// code (-1 when the connection ended without one).
func (c *client) closed() int {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(wait))
	for {
		_, _, err := c.ws.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
			return ce.Code
		}
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			c.t.Fatalf("connection still open after %v", wait)
		}
		return -1
	}
}

// data decodes m's Data into v.
func (m message) data(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("Data of %s: %v", m.raw, err)
	}
}

// errorCode returns the Data string of an Error message.
func (m message) errorCode(t *testing.T) string {
	t.Helper()
	if m.Action != actionError {
		t.Fatalf("got %s, want an Error", m.raw)
	}
	var code string
	m.data(t, &code)
	return code
}

// eventually polls cond until it holds, failing after wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutinesBackTo waits until no more goroutines run than baseline.
func goroutinesBackTo(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, baseline %d:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func int64p(v int64) *int64 { return &v }
