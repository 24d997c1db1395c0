package identity

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// recordSleeps replaces the throttle's sleep with a recorder.
func (f *fixture) recordSleeps() *[]time.Duration {
	var mu sync.Mutex
	var slept []time.Duration
	f.sleep = func(_ context.Context, d time.Duration) error {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
		return nil
	}
	return &slept
}

func from(addr string) func(*http.Request) {
	return func(r *http.Request) { r.RemoteAddr = addr + ":40000" }
}

func (f *fixture) loginFrom(addr, user, pw string) response {
	f.t.Helper()
	return f.post(form("grant_type", "password", "client_id", "app", "username", user, "password", pw, "scope", "Service/Market"), from(addr))
}

func TestLockout(t *testing.T) {
	f := newFixture(t)
	slept := f.recordSleeps()
	attacker, victim := "198.51.100.9", "203.0.113.5"
	wrong := f.loginFrom(attacker, "demo", "guess")
	for range 4 {
		f.loginFrom(attacker, "demo", "guess")
	}
	// The pair is locked: even the right password fails, with the very
	// same answer and the same work (one hash).
	hashes := f.srv.hashCount()
	locked := f.loginFrom(attacker, "demo", "demo-pw")
	if locked.status != 400 || locked.raw != wrong.raw {
		t.Fatalf("locked answer differs: %s vs %s", locked.raw, wrong.raw)
	}
	if n := f.srv.hashCount() - hashes; n != 1 {
		t.Fatalf("a locked login computed %d hashes, want 1", n)
	}
	// The user is not locked out from elsewhere: slowed, not refused.
	*slept = nil
	if res := f.loginFrom(victim, "demo", "demo-pw"); res.status != 200 {
		t.Fatalf("stranger locked the user out: %s", res.raw)
	}
	if len(*slept) != 1 || (*slept)[0] <= 0 {
		t.Fatalf("per-user throttle did not slow the attempt: %v", *slept)
	}
	// Counters live in the store: a restart keeps the lock.
	f.restart()
	f.recordSleeps()
	if res := f.loginFrom(attacker, "demo", "demo-pw"); res.status != 400 {
		t.Fatal("restart lifted the lock")
	}
	// Fifteen minutes later the lock is over.
	f.clock.Add(15*time.Minute + time.Second)
	if res := f.loginFrom(attacker, "demo", "demo-pw"); res.status != 200 {
		t.Fatalf("lock did not end: %s", res.raw)
	}
}

// The same error in the same work for every kind of failure.
func TestFailuresCostOneHash(t *testing.T) {
	f := newFixture(t)
	f.recordSleeps()
	for _, c := range [][2]string{{"demo", "wrong"}, {"ghost", "x"}, {"off", "demo-pw"}, {"demo", "demo-pw"}} {
		before := f.srv.hashCount()
		f.loginFrom("192.0.2.50", c[0], c[1])
		if n := f.srv.hashCount() - before; n != 1 {
			t.Errorf("%s: %d hashes", c[0], n)
		}
	}
}

// A source guessing across many users is throttled, and each pair locks
// on its own.
func TestSourceThrottle(t *testing.T) {
	f := newFixture(t)
	slept := f.recordSleeps()
	for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
		f.loginFrom("198.51.100.77", u, "guess")
	}
	if len(*slept) < 2 || (*slept)[len(*slept)-1] <= (*slept)[0] {
		t.Fatalf("source not throttled progressively: %v", *slept)
	}
	// A success from the pair resets the pair only: the source's count
	// stands, so its next guess is throttled as much as before.
	last := (*slept)[len(*slept)-1]
	if res := f.loginFrom("198.51.100.77", "demo", "demo-pw"); res.status != 200 {
		t.Fatal(res.raw)
	}
	n := len(*slept)
	f.loginFrom("198.51.100.77", "g", "guess")
	if len(*slept) != n+1 || (*slept)[n] < last {
		t.Fatalf("a success reset the source's throttle: %v", *slept)
	}
}

func TestLockoutDisabled(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Lockout.MaxFailures = -1 })
	for range 8 {
		f.loginFrom("198.51.100.1", "demo", "guess")
	}
	if res := f.loginFrom("198.51.100.1", "demo", "demo-pw"); res.status != 200 {
		t.Fatal(res.raw)
	}
}
