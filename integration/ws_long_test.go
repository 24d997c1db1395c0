package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Sessions that last: what time does to a live socket, through the real
// binary, with the intervals short. The backend pings the gateway every
// second (an empty ping, the frame whose arrival as a read's last bytes
// took the process down), the gateway pings both legs every second, and
// both close a peer silent for three seconds.

// backendOnlyConfig is a gatehouse that serves the demo market-data
// backend alone, pinging every second: the backend in a process of its
// own, which a test can stop and start under live sessions.
const backendOnlyConfig = `{
	admin {$GATEHOUSE_ADMIN}
	persist_config off
}
http://127.0.0.1:{$GATEHOUSE_HTTP_PORT} {
	bind 127.0.0.1
	gatehouse_demo_backend {
		tick_interval 200ms
		ping_interval 1s
		idle_timeout 3s
	}
}
`

// externalBackend starts a gatehouse that serves the demo backend alone
// (backendOnlyConfig) and returns it with its WebSocket URL.
func externalBackend(t *testing.T) (*Gatehouse, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Caddyfile.backend")
	if err := os.WriteFile(path, []byte(backendOnlyConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	b := StartGatehouseWith(t, Options{Config: path, ReadyPath: "/"})
	return b, "ws://127.0.0.1:" + strconv.Itoa(b.Port) + "/"
}

// externalBackendConfig is the demo whose /ws relays to upstream, with
// options in its block (each a line).
func externalBackendConfig(t *testing.T, name, upstream string, options ...string) string {
	t.Helper()
	var b bytes.Buffer
	for _, o := range options {
		b.WriteString("\t\t" + o + "\n")
	}
	return demoVariant(t, name, configEdit{
		anchor:  "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}/\n",
		insert:  "\tgatehouse_ws /ws {\n\t\tupstream " + upstream + "\n" + b.String(),
		replace: true,
	})
}

// shortPingsDemo is the demo with the intervals short: the demo backend
// (in the same process) pings every second, ticks every 200ms; the /ws
// gateway pings both legs every second and closes a client silent for 3s.
func shortPingsDemo(t *testing.T) string {
	return demoVariant(t, "short-pings",
		configEdit{anchor: "\tgatehouse_demo_backend\n", insert: "\tgatehouse_demo_backend {\n\t\ttick_interval 200ms\n\t\tping_interval 1s\n\t\tidle_timeout 3s\n\t}\n", replace: true},
		configEdit{anchor: anchorWS, insert: "\t\tping_interval 1s\n\t\tidle_timeout 3s\n"})
}

// TestSessionOutlivesBackendPings: a subscribed session is held across
// several of the backend's pings, with quotes before and after each, and
// the process lives.
// It failed when: the backend's first empty ping, arriving as the last
// bytes of a read, crashed the process (a nil dereference in the backend
// reader).
func TestSessionOutlivesBackendPings(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: shortPingsDemo(t)})
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	ticks(t, c, 1, 2)
	for i := range 6 { // 6 s: about 6 pings of the backend, 6 of the gateway on each leg
		time.Sleep(time.Second)
		waitTicks(t, c, 1)
		if !g.Running() {
			t.Fatalf("the process died %d s into the session", i+1)
		}
	}
	if n := strings.Count(g.Logs(), `"msg":"ws backend leg failed"`); n != 0 {
		t.Errorf("%d backend legs failed", n)
	}
}

// TestClientThatStopsAnsweringPings: the gateway pings the client every
// second; a client that reads (and so answers) stays; one that stops
// reading, and so answering, is closed with 1008 once idle_timeout (3s)
// has passed without a pong.
func TestClientThatStopsAnsweringPings(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: shortPingsDemo(t)})
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	reader, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	silent, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
	if err != nil {
		t.Fatal(err)
	}
	// The reader keeps reading quotes (gorilla answers each ping with a
	// pong) and keeps getting pinged; the silent one reads nothing for 5 s.
	var pings atomic.Int32
	reader.SetPingHandler(func(data string) error {
		pings.Add(1)
		return reader.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	ticks(t, reader, 1, 1)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		waitTicks(t, reader, 1)
	}
	// The silent one's socket holds the pings it did not answer, then the
	// close; its pongs now would find the socket closed, so it sends none.
	silent.SetPingHandler(func(string) error { return nil })
	if n := pings.Load(); n < 3 {
		t.Errorf("the answering client got %d pings in 5 s at a 1 s interval", n)
	}
	if code := closedWith(t, silent); code != websocket.ClosePolicyViolation {
		t.Errorf("the client that stopped answering closed with %d, want 1008", code)
	}
	// The answering client is still served.
	waitTicks(t, reader, 1)
}

// TestBackendRestartedUnderLiveSessions: the backend, in its own process,
// goes away under subscribed sessions, stopped (it closes its legs with
// 1001, which the clients get: reconnect) or killed (the legs are lost:
// 1011, the documented close for a lost backend leg); the gateway process
// lives, a session opened while the backend is down gets 1013, and once
// the backend is back a new session is served.
func TestBackendRestartedUnderLiveSessions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	backendConfig := filepath.Join(dir, "Caddyfile.backend")
	if err := os.WriteFile(backendConfig, []byte(backendOnlyConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	backend := StartGatehouseWith(t, Options{Config: backendConfig, ReadyPath: "/"})
	config := demoVariant(t, "external-backend", configEdit{
		anchor:  "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}/\n",
		insert:  "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:" + strconv.Itoa(backend.Port) + "/\n\t\tping_interval 1s\n\t\tidle_timeout 3s\n",
		replace: true,
	})
	g := StartGatehouseWith(t, Options{Config: config})
	tok := g.PasswordGrant(t, "demo", "demo").AccessToken
	open := func(n int) []*websocket.Conn {
		var live []*websocket.Conn
		for i := range n {
			c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
			if err != nil {
				t.Fatal(err)
			}
			ticks(t, c, 1+i, 2)
			live = append(live, c)
		}
		return live
	}
	for _, tt := range []struct {
		how  string
		stop func()
		code int
	}{
		{"stopped", backend.Stop, websocket.CloseGoingAway},
		{"killed", backend.Kill, websocket.CloseInternalServerErr},
	} {
		live := open(3)
		time.Sleep(1500 * time.Millisecond) // a backend ping or two
		tt.stop()
		for i, c := range live {
			if code := closedWith(t, c); code != tt.code {
				t.Errorf("backend %s: session %d closed with %d, want %d", tt.how, i, code, tt.code)
			}
		}
		if !g.Running() {
			t.Fatalf("the gateway died with its backend (%s)", tt.how)
		}
		c, _, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tok)
		if err != nil {
			t.Fatal(err)
		}
		if code := closedWith(t, c); code != websocket.CloseTryAgainLater {
			t.Errorf("backend %s: a session without a backend closed with %d, want 1013", tt.how, code)
		}
		backend.Start()
	}
	open(1)
}
