package wsauth

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// TestSessionsLeaveNoGoroutine: Sessions that subscribe, lapse,
// re-authenticate and vanish (no close frame) leave no goroutine behind,
// and the gauges return to zero.
func TestSessionsLeaveNoGoroutine(t *testing.T) {
	e, clock := newLiveEnv(t, nil)
	c0 := e.dial(bearer(tokDemo)) // starts the supervisor
	subscribe(t, c0, "Market", "Security!Z", 1)
	time.Sleep(50 * time.Millisecond)
	base := goroutines()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := e.tryDial(bearer(tokDemo), nil)
			if err != nil {
				t.Error(err)
				return
			}
			msgs := []string{subMsg("Market", "Security!A", i), subMsg("News", "News!B", i)}
			var buf []byte
			for _, m := range msgs {
				buf = append(buf, handFrame(wsframe.FinalBit|websocket.TextMessage, []byte(m))...)
			}
			_, _ = c.NetConn().Write(buf)
			time.Sleep(30 * time.Millisecond)
			c.NetConn().Close()
		}()
	}
	wg.Wait()
	clock.set(testExpiry)
	eventually(t, "the first session's lapse", func() bool { return e.lapses(LapseExpired) >= 1 })
	later := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
	if got := roundTrip(t, c0, authToken("Bearer", later)); !strings.Contains(got, "Success") {
		t.Fatal(got)
	}
	readMsg(t, c0)
	c0.Close()
	eventually(t, "every session ended", func() bool { return e.sessions() == 0 })
	eventually(t, "goroutines back to the baseline", func() bool { return goroutines() <= base })
	for _, st := range []State{StateUnauthenticated, StateAuthenticated, StateExpired} {
		if n := e.gauge(st); n != 0 {
			t.Fatalf("gauge %s = %d", st, n)
		}
	}
	if n := e.metrics.get(func(m *fakeMetrics) int { return m.subs["Market"] + m.subs["News"] }); n != 0 {
		t.Fatalf("subscriptions gauge %d", n)
	}
}

// TestReconfigureLeavesNoGoroutine: 100 Reconfigures, each with another
// verifier and revocation signal, keep the session (its subscription
// flows after them) and leave the goroutines as after the first: each
// restart ends the supervisor it replaces. It failed when
// restartSupervisor started a new supervisor without ending the old one.
func TestReconfigureLeavesNoGoroutine(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := dialAuthenticated(t, e, tokDemo, true)
	subscribe(t, c, "Market", "Security!BHP.ASX", 1)
	next := func() {
		sig := new(changes)
		if _, err := e.gw.Reconfigure(reconfigured(e, func(c *Config) {
			c.Hooks.Verifier, c.Hooks.RevocationsChanged = &fakeVerifier{}, sig.wait
		})); err != nil {
			t.Fatal(err)
		}
	}
	next()
	time.Sleep(50 * time.Millisecond)
	base := goroutines()
	for range 99 {
		next()
	}
	eventually(t, "goroutines back to the baseline", func() bool { return goroutines() <= base })
	subscribe(t, c, "Market", "Security!RIO.ASX", 2)
}
