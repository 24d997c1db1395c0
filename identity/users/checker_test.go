package users

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// fakeTime is a clock that only sleeping moves: the sleeper advances it
// and records each wait.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(_ context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.slept = append(f.slept, d)
	return nil
}

func (f *fakeTime) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func (f *fakeTime) sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.slept...)
}

// newChecker is a checker on a store holding "demo" (demo-pw) and the
// disabled "off" (demo-pw), with a fake clock.
func newChecker(t *testing.T, mutate ...func(*CheckerConfig)) (*Checker, *fakeTime, store.Store) {
	t.Helper()
	st := openStore(t)
	dh, _ := passwordHashes(t)
	if _, err := Seed(t.Context(), st, []store.User{{Username: "off", Subject: "sub-off", PasswordHash: dh, Disabled: true}}, t0); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTime{now: t0}
	cfg := CheckerConfig{Store: st, Now: ft.Now, Sleep: ft.Sleep}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := NewChecker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, ft, st
}

// Locked, unknown, disabled and wrong-password answers are the same error
// after the same time, the floor, whatever work each did (only the wrong
// password is hashed).
func TestFailuresWaitTheFloor(t *testing.T) {
	c, ft, _ := newChecker(t, func(cfg *CheckerConfig) { cfg.Lockout.ThrottleAfter = 1000 })
	const src = "192.0.2.1"
	for range DefaultMaxFailures {
		if _, err := c.Check(t.Context(), "demo", "guess", "198.51.100.1"); !errors.Is(err, ErrBadCredentials) {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, user, password, source string
		hashes                       int64
	}{
		{"wrong password", "demo", "guess", src, 1},
		{"unknown user", "ghost", "demo-pw", src, 0},
		{"disabled user", "off", "demo-pw", src, 0},
		{"locked pair", "demo", "demo-pw", "198.51.100.1", 0},
		{"over-long name", string(make([]byte, MaxUsernameLen+1)), "x", src, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, hashes := ft.Now(), c.Hashes()
			_, err := c.Check(t.Context(), tc.user, tc.password, tc.source)
			if !errors.Is(err, ErrBadCredentials) || err.Error() == ErrBadCredentials.Error() {
				t.Fatalf("err = %v, want ErrBadCredentials with a reason", err)
			}
			if took := ft.Now().Sub(start); took != DefaultFailureFloor {
				t.Errorf("took %v, want the floor %v", took, DefaultFailureFloor)
			}
			if n := c.Hashes() - hashes; n != tc.hashes {
				t.Errorf("%d hashes, want %d", n, tc.hashes)
			}
		})
	}
	// A success is not held to the floor.
	start := ft.Now()
	if _, err := c.Check(t.Context(), "demo", "demo-pw", src); err != nil {
		t.Fatal(err)
	}
	if took := ft.Now().Sub(start); took != 0 {
		t.Errorf("a success waited %v", took)
	}
}

// A source guessing across many users is throttled progressively; a
// success from it refunds only its own attempt, so its next guess is
// throttled as much as before.
func TestSourceThrottle(t *testing.T) {
	c, ft, _ := newChecker(t, func(cfg *CheckerConfig) { cfg.FailureFloor = time.Nanosecond })
	const src = "198.51.100.77"
	var throttled []time.Duration
	throttle := func(user, password string) time.Duration {
		before := len(ft.sleeps())
		c.Check(t.Context(), user, password, src)
		var d time.Duration
		for _, s := range ft.sleeps()[before:] {
			if s > time.Nanosecond {
				d += s
			}
		}
		return d
	}
	for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
		throttled = append(throttled, throttle(u, "guess"))
	}
	want := []time.Duration{0, 0, 0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	for i := range want {
		if throttled[i] != want[i] {
			t.Fatalf("throttle delays %v, want %v", throttled, want)
		}
	}
	if d := throttle("demo", "demo-pw"); d != 2*time.Second {
		t.Fatalf("the success was throttled %v, want 2s", d)
	}
	if d := throttle("g", "guess"); d != 2*time.Second {
		t.Fatalf("after a success, the next guess was throttled %v, want 2s (the success refunded more than itself)", d)
	}
}

// A burst of parallel guesses on one user from one source costs at most
// the policy's number of hashes, and once locked the right password is
// refused; a stranger's success elsewhere does not lift the lock.
func TestParallelGuessesCostAtMostTheLimit(t *testing.T) {
	c, _, _ := newChecker(t, func(cfg *CheckerConfig) { cfg.SourceQueue, cfg.HashWait = 100, time.Minute })
	const n, src = 40, "203.0.113.9"
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = c.Check(context.Background(), "demo", "guess", src) })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	if h := c.Hashes(); h > DefaultMaxFailures {
		t.Fatalf("%d parallel guesses computed %d hashes, want at most %d", n, h, DefaultMaxFailures)
	}
	if _, err := c.Check(t.Context(), "demo", "demo-pw", "192.0.2.200"); err != nil {
		t.Fatalf("the user is locked out from elsewhere: %v", err)
	}
	if _, err := c.Check(t.Context(), "demo", "demo-pw", src); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("the right password was admitted on a locked pair: %v", err)
	}
}

// The right password inside a burst of wrong ones: it succeeds only if
// admitted before the lock, and its success does not erase the burst's
// failures (it refunds only its own attempt).
func TestSuccessRefundsOnlyItself(t *testing.T) {
	c, _, st := newChecker(t)
	const src = "203.0.113.10"
	for range DefaultMaxFailures - 1 {
		c.Check(t.Context(), "demo", "guess", src)
	}
	if _, err := c.Check(t.Context(), "demo", "demo-pw", src); err != nil {
		t.Fatal(err)
	}
	cnt, err := st.Counter(t.Context(), "pair:demo\x00"+src)
	if err != nil || cnt.Count != DefaultMaxFailures-1 || cnt.Locked(t0) {
		t.Fatalf("pair after a success at the limit: %+v, %v", cnt, err)
	}
	if _, err := c.Check(t.Context(), "demo", "guess", src); !errors.Is(err, ErrBadCredentials) {
		t.Fatal(err)
	}
	if _, err := c.Check(t.Context(), "demo", "demo-pw", src); !errors.Is(err, ErrBadCredentials) {
		t.Fatal("one more failure after the success did not lock the pair")
	}
}

// Under a flood from one source, another source's login gets a slot: the
// flood holds no more than its share, and its excess is refused at once.
func TestFloodDoesNotStarveOthers(t *testing.T) {
	c, _, _ := newChecker(t, func(cfg *CheckerConfig) {
		cfg.HashConcurrency, cfg.SourceQueue, cfg.HashWait = 2, 4, time.Minute
		cfg.Lockout.MaxFailures = -1 // the flood must reach the slots
	})
	const flood, n = "198.51.100.66", 12
	release := make(chan struct{})
	holding := make(chan struct{}, n)
	c.hashing = func(source string) {
		if source == flood {
			holding <- struct{}{}
			<-release
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = c.Check(context.Background(), "demo", "guess", flood) })
	}
	<-holding // the flood holds its share of the slots
	done := make(chan error, 1)
	go func() {
		_, err := c.Check(context.Background(), "demo", "demo-pw", "192.0.2.7")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the other source's login: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other source's login got no slot while the flood held its share")
	}
	if len(holding) != 0 {
		t.Fatal("the flood holds more than its share of the slots")
	}
	close(release)
	wg.Wait()
	busy := 0
	for _, err := range errs {
		if errors.Is(err, ErrBusy) {
			busy++
		}
	}
	if busy != n-4 {
		t.Fatalf("%d of %d flood attempts refused as busy, want %d (all past the source's queue)", busy, n, n-4)
	}
}

func TestNeedsRehashUpgradesOnLogin(t *testing.T) {
	c, _, st := newChecker(t)
	u, _ := st.User(t.Context(), "demo")
	weak, err := hashWith("demo-pw", 8192, 1)
	if err != nil {
		t.Fatal(err)
	}
	u.PasswordHash = weak
	if err := st.UpdateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if !NeedsRehash(weak) || NeedsRehash(demoHash) {
		t.Fatal("NeedsRehash does not tell old parameters from current ones")
	}
	if _, err := c.Check(t.Context(), "demo", "demo-pw", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	u, _ = st.User(t.Context(), "demo")
	if NeedsRehash(u.PasswordHash) {
		t.Fatalf("hash not upgraded: %s", u.PasswordHash)
	}
	if ok, _ := VerifyPassword(u.PasswordHash, "demo-pw"); !ok {
		t.Fatal("the upgraded hash does not verify the password")
	}
}

// Parallel logins of one user from one address with the right password
// all succeed, however many: an attempt that finds the pair's count full
// of attempts in flight waits for them (successes take theirs back).
func TestParallelRightLoginsSucceed(t *testing.T) {
	c, _, st := newChecker(t, func(cfg *CheckerConfig) { cfg.SourceQueue, cfg.HashWait = 100, time.Minute })
	const n, src = 3 * DefaultMaxFailures, "192.0.2.30"
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = c.Check(context.Background(), "demo", "demo-pw", src) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("login %d: %v", i, err)
		}
	}
	if cnt, err := st.Counter(t.Context(), "pair:demo\x00"+src); err != nil || cnt.Count != 0 || cnt.Locked(t0) {
		t.Fatalf("pair after %d successes: %+v, %v", n, cnt, err)
	}
}

// The throttle is seen from the first failure past ThrottleAfter: with
// the defaults, failures 1 to 3 take the floor (500ms), the 4th the floor
// and 250ms, doubling to the 3s maximum, the same for a known user (whose
// pair locks at the 5th) as for a name that is no user.
// It failed when: every failure waited for the floor from its start, the
// throttle's delay inside it, so the throttle showed only from the 6th.
func TestThrottleAfterTheFloor(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	want := []time.Duration{ms(500), ms(500), ms(500), ms(750), ms(1000), ms(1500), ms(2500), ms(3500), ms(3500), ms(3500)}
	for _, user := range []string{"demo", "ghost"} {
		c, ft, _ := newChecker(t)
		var took []time.Duration
		for range 10 {
			start := ft.Now()
			if _, err := c.Check(t.Context(), user, "guess", "198.51.100.6"); !errors.Is(err, ErrBadCredentials) {
				t.Fatal(err)
			}
			took = append(took, ft.Now().Sub(start))
		}
		if !slices.Equal(took, want) {
			t.Errorf("%s: failures 1 to 10 took %v, want %v", user, took, want)
		}
	}
}

// With the default throttle, each failed answer for a known user from a
// source (the 8th on a locked pair) takes the time it takes for an unknown
// name. When this test was written, the 8th took different times.
func TestLockedAndUnknownTakeTheSameTime(t *testing.T) {
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
func TestStrangerFailuresSpareParallelRightLogins(t *testing.T) {
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
func TestBurstsLeaveNoInflightEntries(t *testing.T) {
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

// While the hash slots are busy, a guess on a known user and one on an
// unknown name get the same answer. When this test was written, the first
// answered ErrBusy (503 temporarily_unavailable) and the second
// ErrBadCredentials (400 invalid_grant): the answer told names apart.
func TestBusyAnswerSameForUnknownNames(t *testing.T) {
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
func TestBurstWithRefundsHashesAtMostTheLimit(t *testing.T) {
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
