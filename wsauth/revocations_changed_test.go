package wsauth

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// changes is a Hooks.RevocationsChanged the test fires.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

func (c *changes) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changes) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// TestRevocationsChanged: with the supervisor's walks and rechecks an
// hour apart, a revocation ends a live session's authority only once
// Hooks.RevocationsChanged signals, and then at once; a session whose
// token the verifier still accepts is checked and goes on; and the next
// signal (a fresh channel) works as the first.
func TestRevocationsChanged(t *testing.T) {
	sig := new(changes)
	e, _ := newLiveEnv(t, func(c *Config) {
		c.Live.SuperviseInterval, c.Live.RecheckInterval = time.Hour, time.Hour
		c.Hooks.RevocationsChanged = sig.wait
	})
	revoked, kept, later := madeUpToken("u-1", []string{policy.ScopeMarket}, 24*time.Hour), madeUpToken("u-2", []string{policy.ScopeMarket}, 24*time.Hour),
		madeUpToken("u-3", []string{policy.ScopeMarket}, 24*time.Hour)
	a, b, c := e.dial(bearer(revoked)), e.dial(bearer(kept)), e.dial(bearer(later))
	subscribe(t, a, "Market", "Security!BHP.ASX", 1)
	subscribe(t, b, "Market", "Security!BHP.ASX", 1)
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)

	e.ver.refuse(revoked, &Refusal{Reason: "revoked"})
	time.Sleep(300 * time.Millisecond)
	if e.lapses(LapseRevoked) != 0 {
		t.Fatal("the session lapsed before any signal: the test cannot tell the signal's effect")
	}
	calls := e.ver.calls.Load()
	start := time.Now()
	sig.fire()
	want := `{"Controller":"Auth","Topic":"Identify","Action":"Publish","Data":{"Result":"Reject"}}`
	if got := readMsg(t, a); got != want {
		t.Fatalf("push after the signal:\n got %s\nwant %s", got, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the revocation took %v after the signal", d)
	}
	eventually(t, "every live session verified again", func() bool { return e.ver.calls.Load() >= calls+3 })
	echo := `{"Controller":"Market","Topic":"Echo"}`
	if got := roundTrip(t, b, echo); got != echo {
		t.Fatalf("the session not revoked, after the signal: %s", got)
	}

	e.ver.refuse(later, &Refusal{Reason: "revoked"})
	sig.fire()
	if got := readMsg(t, c); got != want {
		t.Fatalf("push after the second signal:\n got %s\nwant %s", got, want)
	}
	eventually(t, "two revocations counted", func() bool { return e.lapses(LapseRevoked) >= 2 })
	if n := e.lapses(LapseRevoked); n != 2 {
		t.Fatalf("%d revocations counted, want 2", n)
	}
}

// TestRevocationSignalledDuringAuthentication: with RevocationsChanged
// set and a long RecheckInterval, a token revoked (and the revocation
// signalled) while a session authenticates with it, after the verifier
// accepted it, loses its authority at once: the session's check time is
// when the verifier was asked, before the signal, so the token is due
// again. It failed when the check time was taken after the verification
// (after the backend dial, for a first authentication): the revoked token
// kept its authority for the RecheckInterval, here an hour.
func TestRevocationSignalledDuringAuthentication(t *testing.T) {
	for _, how := range []string{"header auth, slow backend dial", "AuthToken, slow backend dial", "re-AuthToken, verifier answer in flight"} {
		t.Run(how, func(t *testing.T) {
			sig := new(changes)
			gb := newGatedBackend(t)
			fv := &fakeVerifier{}
			tok := madeUpToken("u-victim", []string{policy.ScopeMarket}, 24*time.Hour)
			gv := &gatedVerifier{inner: fv, decided: make(chan struct{}, 1), release: make(chan struct{})}
			t.Cleanup(func() {
				select {
				case <-gv.release:
				default:
					close(gv.release)
				}
			})
			reauth := strings.HasPrefix(how, "re-")
			e, _ := newLiveEnv(t, func(c *Config) {
				c.Live.RecheckInterval = time.Hour
				c.Hooks.RevocationsChanged = sig.wait
				c.Hooks.Verifier = gv
				if !reauth {
					c.Backend.Upstreams = []string{gb.url()}
				}
			})
			var c *websocket.Conn
			switch {
			case reauth:
				first := madeUpToken("u-victim", []string{policy.ScopeMarket}, 24*time.Hour, "first")
				c = e.dial(bearer(first))
				gv.hold = tok
				if err := c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tok))); err != nil {
					t.Fatal(err)
				}
				<-gv.decided
			case strings.HasPrefix(how, "header"):
				c = e.dial(bearer(tok))
			default:
				c = e.dial(nil)
				if err := c.WriteMessage(websocket.TextMessage, []byte(authToken("Bearer", tok))); err != nil {
					t.Fatal(err)
				}
			}
			if !reauth {
				select {
				case <-gb.entered:
				case <-time.After(5 * time.Second):
					t.Fatal("the backend dial never came")
				}
			}
			// The revocation lands; the verifier signals it.
			fv.refuse(tok, &Refusal{Reason: "revoked"})
			sig.fire()
			waitArmed(t, sig)
			if reauth {
				close(gv.release)
			} else {
				gb.open()
			}
			if !strings.HasPrefix(how, "header") {
				if got := readMsg(t, c); !strings.Contains(got, `"Result":"Success"`) {
					t.Fatalf("authentication: %s", got)
				}
			}
			if _, err := fv.VerifyAccessToken(context.Background(), tok); err == nil {
				t.Fatal("the verifier does not refuse the token: the test cannot tell")
			}
			if live, m := stillLive(t, c); live {
				t.Fatalf("a token revoked (and RevocationsChanged signalled) during its authentication keeps full authority "+
					"(until RecheckInterval): the session still forwards (%s)", m)
			}
		})
	}
}
