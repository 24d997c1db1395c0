package wsauth

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

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
		// An idle timeout a loaded machine's scheduling pauses do not reach
		// (300 ms closed it with 1008 on one), at ten pings a period.
		e := newTestEnv(t, func(c *Config) {
			c.Transport.PingInterval, c.Transport.IdleTimeout = 100*time.Millisecond, time.Second
		})
		c := e.dial(bearer(tokDemo))
		// Reading answers pings; three seconds are several idle periods.
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, _, err := c.ReadMessage(); !isTimeout(err) {
			t.Fatalf("socket ended: %v", err)
		}
	})
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
