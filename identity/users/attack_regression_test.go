package users

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// With the default throttle, the 8th failed answer for a known user from a
// source (locked pair) and for an unknown name take different times.
func TestAttackTimingLockedVsUnknown(t *testing.T) {
	run := func(user string) []time.Duration {
		c, ft, _ := newChecker(t)
		var took []time.Duration
		for range 9 {
			start := ft.Now()
			_, err := c.Check(t.Context(), user, "guess", "198.51.100.5")
			if !errors.Is(err, ErrBadCredentials) {
				t.Fatal(err)
			}
			took = append(took, ft.Now().Sub(start))
		}
		return took
	}
	known, unknown := run("demo"), run("ghost")
	t.Logf("known user  : %v", known)
	t.Logf("unknown user: %v", unknown)
	for i := range known {
		if known[i] != unknown[i] {
			t.Errorf("attempt %d: known %v, unknown %v", i+1, known[i], unknown[i])
		}
	}
}

// A stranger's failures against the user (from other sources, no pair
// locked) throttle the legit user's attempts longer than HashWait: the
// parallel right logins must still all succeed (an attempt refused on the
// full pair count waits for the admitted ones, which are throttled before
// admission, not after). Real sleeps, scaled down (defaults: MaxDelay 3s >
// HashWait 2s; here 1.5s > 1s), with slots enough that only the throttle
// matters.
func TestAttackStrangerFailsParallelRightLogins(t *testing.T) {
	for _, strangers := range []int{0, 10} {
		t.Run(fmt.Sprintf("%d strangers", strangers), func(t *testing.T) {
			c, _, _ := newChecker(t, func(cfg *CheckerConfig) {
				cfg.Now, cfg.Sleep = time.Now, SleepContext
				cfg.FailureFloor = time.Millisecond
				cfg.HashWait = time.Second
				cfg.Lockout.BaseDelay, cfg.Lockout.MaxDelay = 100*time.Millisecond, 1500*time.Millisecond
				cfg.SourceQueue, cfg.HashConcurrency, cfg.SourceShare = 100, 8, 8
			})
			// stranger: one wrong guess from each of 10 sources (none locks a pair)
			for i := range strangers {
				c.Check(t.Context(), "demo", "guess", fmt.Sprintf("203.0.113.%d", i))
			}
			const n, src = DefaultMaxFailures + 1, "192.0.2.44"
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() { _, errs[i] = c.Check(context.Background(), "demo", "demo-pw", src) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("legit parallel login %d: %v", i, err)
				}
			}
		})
	}
}

// Bursts mixing right and wrong passwords, cancellations and timeouts
// leave no in-flight or gate entries, no waiter past its bound.
func TestAttackInflightNoLeak(t *testing.T) {
	c, _, _ := newChecker(t, func(cfg *CheckerConfig) {
		cfg.Now, cfg.Sleep = time.Now, SleepContext
		cfg.FailureFloor = 5 * time.Millisecond
		cfg.HashWait = 150 * time.Millisecond
		cfg.Lockout.BaseDelay, cfg.Lockout.MaxDelay = time.Millisecond, 20*time.Millisecond
		cfg.SourceQueue = 12
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var worst time.Duration
	counts := map[string]int{}
	for round := range 6 {
		for i := range 30 {
			wg.Go(func() {
				ctx := context.Background()
				if i%4 == 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*time.Millisecond)
					defer cancel()
				}
				pw := "guess"
				if i%3 == 0 {
					pw = "demo-pw"
				}
				src := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}[(i+round)%3]
				start := time.Now()
				_, err := c.Check(ctx, "demo", pw, src)
				d := time.Since(start)
				mu.Lock()
				worst = max(worst, d)
				key := "ok"
				if err != nil {
					key = err.Error()
				}
				counts[key]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	t.Logf("outcomes %v; slowest %v; hashes %d", counts, worst, c.Hashes())
	c.flights.mu.Lock()
	nf := len(c.flights.pairs)
	c.flights.mu.Unlock()
	c.gate.mu.Lock()
	ng := len(c.gate.perSource)
	c.gate.mu.Unlock()
	if nf != 0 || ng != 0 || len(c.gate.slots) != 0 {
		t.Fatalf("left %d flights, %d gate sources, %d slots held", nf, ng, len(c.gate.slots))
	}
}

// While the hash slots are busy, a guess on a known user answers ErrBusy
// (503 temporarily_unavailable) but one on an unknown name answers
// ErrBadCredentials (400 invalid_grant): the answer tells names apart.
func TestAttackBusyOracle(t *testing.T) {
	c, _, _ := newChecker(t, func(cfg *CheckerConfig) {
		cfg.HashConcurrency, cfg.HashWait = 2, 50*time.Millisecond
	})
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	c.hashing = func(string) { held <- struct{}{}; <-release }
	// two other sources' logins hold the two slots (slow hashes / load)
	for _, s := range []string{"192.0.2.1", "192.0.2.2"} {
		go c.Check(context.Background(), "demo", "x", s)
	}
	<-held
	<-held
	_, known := c.Check(t.Context(), "demo", "guess", "203.0.113.50")
	_, unknown := c.Check(t.Context(), "ghost", "guess", "203.0.113.50")
	_, disabled := c.Check(t.Context(), "off", "guess", "203.0.113.50")
	close(release)
	t.Logf("known: %v\nunknown: %v\ndisabled: %v", known, unknown, disabled)
	if errors.Is(known, ErrBusy) != errors.Is(unknown, ErrBusy) {
		t.Error("known and unknown users get different answers while slots are busy")
	}
}

// Bursts of wrong guesses with the right password mixed in and some
// guesses cancelled mid-flight (refunds): wrong-password hashes stay <= the
// limit, and no right password passes once the pair is locked.
func TestAttackBurstWithRefunds(t *testing.T) {
	for trial := range 5 {
		c, _, _ := newChecker(t, func(cfg *CheckerConfig) {
			cfg.Now, cfg.Sleep = time.Now, SleepContext
			cfg.FailureFloor = time.Millisecond
			cfg.HashWait = 100 * time.Millisecond
			cfg.Lockout.BaseDelay, cfg.Lockout.MaxDelay = time.Millisecond, 2*time.Millisecond
			cfg.SourceQueue = 100
		})
		const src = "203.0.113.77"
		var mu sync.Mutex
		wrongFails, oks, lockedRight := 0, 0, 0
		for burst := range 3 {
			var wg sync.WaitGroup
			for i := range 25 {
				wg.Go(func() {
					ctx := context.Background()
					if i%5 == 1 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, time.Duration(i)*time.Millisecond)
						defer cancel()
					}
					pw := "guess"
					if i == 12 || i == 24 {
						pw = "demo-pw"
					}
					_, err := c.Check(ctx, "demo", pw, src)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						oks++
					case pw == "guess" && err != nil && strings.Contains(err.Error(), "wrong password"):
						wrongFails++
					case pw == "demo-pw" && err != nil && strings.Contains(err.Error(), "locked"):
						lockedRight++
					}
				})
			}
			wg.Wait()
			_ = burst
		}
		t.Logf("trial %d: hashes %d, wrong-password failures %d, successes %d, right refused as locked %d", trial, c.Hashes(), wrongFails, oks, lockedRight)
		if wrongFails > DefaultMaxFailures {
			t.Errorf("%d wrong-password hashes, limit %d", wrongFails, DefaultMaxFailures)
		}
		if c.Hashes()-int64(oks) > DefaultMaxFailures {
			t.Errorf("%d hashes beyond successes", c.Hashes()-int64(oks))
		}
	}
}
