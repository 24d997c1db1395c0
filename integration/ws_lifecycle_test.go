package integration

import (
	"strconv"
	"testing"

	"github.com/gorilla/websocket"
)

// TestWSBackendDown runs a gateway, /down, whose only upstream is a
// loopback port nothing listens on: a socket authenticated by its header
// is opened, then closed with 1013 (or 1011) with no detail; the demo's
// own gateway still relays.
func TestWSBackendDown(t *testing.T) {
	t.Parallel()
	closed := reservePort(t) // nothing listens there
	g := StartGatehouseWith(t, Options{Config: wsExtraConfig(t, "ws-down", "/down", "ws://127.0.0.1:"+strconv.Itoa(closed)+"/")})
	demo := g.PasswordGrant(t, "demo", "demo")
	// The backend leg opens after the 101: the socket opens, then closes.
	c, resp, err := dialWS(t, g, "/down?version=1.1", "ServiceJson", demo.AccessToken)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	code := readClose(t, c) // fails on a close with detail
	if code != websocket.CloseTryAgainLater && code != websocket.CloseInternalServerErr {
		t.Fatalf("backend down: close %d, want 1013 or 1011", code)
	}
	t.Logf("backend down: close %d", code)
	// The demo's own gateway still relays.
	serverInfoAnswered(t, mustAuthedWS(t, g, demo.AccessToken), 1)
}

// mustAuthedWS is authedWS with the default dialer.
func mustAuthedWS(t *testing.T, g *Gatehouse, token string) *websocket.Conn {
	t.Helper()
	c, _ := authedWS(t, g, nil, token)
	return c
}

// TestWSReloadAndExit checks the end of live sockets through the real
// binary: a gateway on /relay with drain_window 1s relays to the demo
// backend of a second gatehouse, which the reloads do not touch (the
// demo's own backend is in the reloaded config: it closes its connections
// with 1001 at once, and the gateway relays that close). After `gatehouse
// reload` of a config whose gateway differs only in what a live session
// can take (auth_timeout) a live socket goes on; after one that changes
// its upstream it is closed with 1012 (the client reconnects, and the new
// config serves it); when the process exits (SIGTERM) a live socket is
// closed with 1012 as well, within the drain window, so that its client
// reconnects to another instance.
func TestWSReloadAndExit(t *testing.T) {
	t.Parallel()
	backend := StartGatehouse(t)
	upstream := "ws://127.0.0.1:" + strconv.Itoa(backend.BackendPort) + "/"
	sameBackend := "ws://127.0.0.1:" + strconv.Itoa(backend.BackendPort) // another URL, the same backend
	g := StartGatehouseWith(t, Options{Config: wsExtraConfig(t, "ws-reload", "/relay", upstream, "drain_window 1s")})
	backend.AlsoCheckSecretsOf(g)
	demo := g.PasswordGrant(t, "demo", "demo")
	dial := func() *websocket.Conn {
		t.Helper()
		c, resp, err := dialWS(t, g, "/relay?version=1.1", "ServiceJson", demo.AccessToken)
		if err != nil {
			t.Fatalf("dial /relay: %v (%v)", err, resp)
		}
		return c
	}

	c := dial()
	serverInfoAnswered(t, c, 1)
	// A config that differs (Caddy skips a reload to the same config),
	// not in the gateway's upstream or transport: the socket is kept.
	g.Reload(wsExtraConfig(t, "ws-reload-2", "/relay", upstream, "drain_window 1s", "auth_timeout 9s"))
	serverInfoAnswered(t, c, 2)
	// Another upstream URL (the same backend): the socket is closed.
	g.Reload(wsExtraConfig(t, "ws-reload-3", "/relay", sameBackend, "drain_window 1s", "auth_timeout 9s"))
	if code := readClose(t, c); code != websocket.CloseServiceRestart {
		t.Fatalf("live socket across a reload that changes its upstream: close %d, want 1012", code)
	}

	c = dial()
	serverInfoAnswered(t, c, 2)
	g.Stop()
	if code := readClose(t, c); code != websocket.CloseServiceRestart {
		t.Fatalf("live socket at exit: close %d, want 1012", code)
	}
}
