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
	// same answer, and costs no hash (the users package tests that every
	// failure takes the same time).
	hashes := f.srv.hashCount()
	locked := f.loginFrom(attacker, "demo", "demo-pw")
	if locked.status != 400 || locked.raw != wrong.raw {
		t.Fatalf("locked answer differs: %s vs %s", locked.raw, wrong.raw)
	}
	if n := f.srv.hashCount() - hashes; n != 0 {
		t.Fatalf("a locked login computed %d hashes, want 0", n)
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

func TestLockoutDisabled(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Lockout.MaxFailures = -1 })
	for range 8 {
		f.loginFrom("198.51.100.1", "demo", "guess")
	}
	if res := f.loginFrom("198.51.100.1", "demo", "demo-pw"); res.status != 200 {
		t.Fatal(res.raw)
	}
}
