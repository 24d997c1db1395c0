package wsauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// TestUnauthPlacesPerSource: one source (an address, an IPv6 /64; here
// as ClientIP reads it from a test header) gets at most a sixteenth of
// the unauthenticated places, so a burst from one address that holds them
// for Auth.Timeout does not keep out the clients that authenticate by an
// AuthToken message (every browser). Another source still gets its
// socket, and the attacker's places come back when its sockets close.
// (It failed with one global bound: the burst took all 1,024 places.)
func TestUnauthPlacesPerSource(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Hooks.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Source") }
	})
	share := DefaultMaxUnauthenticated / 16
	const burst = DefaultMaxUnauthenticated + 16
	conns := make([]*handConn, burst)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64) // 64 dials at a time
	for i := range conns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// One IPv6 /64, its hosts varying.
			conns[i] = handDial(t, e, fmt.Sprintf("X-Test-Source: [2001:db8:1:2::%x]:4242\r\n", i+1), 5*time.Second)
		})
	}
	wg.Wait()
	opened, refused := 0, 0
	for _, c := range conns {
		switch {
		case c.resp == nil:
		case c.resp.StatusCode == http.StatusSwitchingProtocols:
			opened++
		case c.resp.StatusCode == http.StatusServiceUnavailable:
			refused++
		}
	}
	if opened != share || refused != burst-share {
		t.Errorf("one /64: %d sockets opened, %d refused; want %d and %d", opened, refused, share, burst-share)
	}
	for _, src := range []string{"192.0.2.7:1000", "[2001:db8:1:3::1]:4242"} {
		c, resp, err := e.tryDial(http.Header{"X-Test-Source": {src}}, nil)
		if err != nil {
			t.Errorf("another source (%s), with one /64 holding its share: %v (%v)", src, err, resp)
			continue
		}
		if got := roundTrip(t, c, authToken("Bearer", tokDemo)); !strings.Contains(got, `"Result":"Success"`) {
			t.Errorf("another source's AuthToken: %s", got)
		}
		c.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	eventually(t, "the /64's places given back", func() bool {
		c, _, err := e.tryDial(http.Header{"X-Test-Source": {"[2001:db8:1:2::ffff]:1"}}, nil)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// TestSessionsPerUser: one user (token subject) holds at most
// Limits.Sessions live sessions on a gateway, each with its own backend
// connection: a parallel burst of upgrades with the Authorization header
// opens that many and no more (the others close with 1008 before a
// backend leg is opened), an AuthToken past it is answered Reject, a
// closed session gives its place back, another user is not affected,
// and an override for a scope the new session holds raises the bound. (It failed with
// no bound: one token opened 300 sessions and 300 backend legs.)
func TestSessionsPerUser(t *testing.T) {
	const limit, burst = 5, 40
	e := newTestEnv(t, func(c *Config) {
		c.Limits.Default.Sessions = limit
		c.Limits.Overrides = []policy.LimitOverride{{Scope: "Service/Wide", Limits: policy.Limits{Sessions: limit + 2}}}
	})
	conns := make([]*websocket.Conn, burst)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, _, err := e.tryDial(bearer(tokDemo), nil)
			if err == nil {
				conns[i] = c
			}
		})
	}
	wg.Wait()
	live := 0
	for _, c := range conns {
		if c == nil {
			continue
		}
		// A refused one is closed with 1008; a live one answers.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := c.WriteMessage(websocket.TextMessage, []byte(queryIdentify)); err != nil {
			continue
		}
		if _, p, err := c.ReadMessage(); err == nil && strings.Contains(string(p), `"Result":"Success"`) {
			live++
		} else if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.ClosePolicyViolation {
			t.Errorf("a refused session: %v %s", err, p)
		}
	}
	if live != limit {
		t.Errorf("%d sessions of one user live, limit %d", live, limit)
	}
	if n := e.backend.upgrades(); n != limit {
		t.Errorf("%d backend legs opened, want %d", n, limit)
	}
	// By an AuthToken: Reject, the socket stays unauthenticated.
	c := e.dial(nil)
	if got := roundTrip(t, c, authToken("Bearer", tokDemo)); !strings.Contains(got, `"Result":"Reject"`) {
		t.Errorf("an AuthToken past the limit: %s", got)
	}
	// Another user is not affected; an override raises the bound.
	other := madeUpToken("u-other", []string{policy.ScopeMarket}, 0)
	if got := roundTrip(t, c, authToken("Bearer", other)); !strings.Contains(got, `"Result":"Success"`) {
		t.Errorf("another user: %s", got)
	}
	wide := madeUpToken("u-demo", []string{policy.ScopeMarket, "Service/Wide"}, 0)
	if w, _, err := e.tryDial(bearer(wide), nil); err != nil || !strings.Contains(roundTrip(t, w, queryIdentify), `"Result":"Success"`) {
		t.Errorf("the same user with a scope whose override raises the bound: %v", err)
	}
	// A closed session gives its place back.
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	eventually(t, "the user's places given back", func() bool {
		c, _, err := e.tryDial(bearer(tokDemo), nil)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_ = c.WriteMessage(websocket.TextMessage, []byte(queryIdentify))
		_, p, err := c.ReadMessage()
		return err == nil && strings.Contains(string(p), `"Result":"Success"`)
	})
}
