package users

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Errors of Checker.Check besides internal faults.
var (
	// ErrBadCredentials is the one answer to a wrong password, an unknown
	// user, a disabled user and a locked pair, so none can be told apart
	// (no enumeration). The wrapped text says which, for the log only.
	ErrBadCredentials = errors.New("invalid username or password")
	// ErrBusy: the caller's source has too many checks in progress, or no
	// hashing slot came free in time. Nothing was counted against anyone.
	ErrBusy = errors.New("the server is busy, try again")
)

// Bounds and defaults of a password check.
const (
	// MaxUsernameLen bounds the username a caller may send.
	MaxUsernameLen = 255
	// DefaultHashWait bounds how long a check waits for a hashing slot.
	DefaultHashWait = 2 * time.Second
	// DefaultFailureFloor is how long every failed check takes at least:
	// above the time of the default argon2id hash (about 50 ms on one
	// core) and of a bcrypt hash of cost 12 (about 300 ms), so that no
	// failure is told from another by its time.
	DefaultFailureFloor = 500 * time.Millisecond
	// unknownBuckets bounds the counters of names that are no user: they
	// are counted in this many buckets, so random names add no rows.
	unknownBuckets = 4096
)

// noLock is the limit of counters that only throttle.
const noLock = math.MaxInt32

// CheckerStore is what the checker needs of the store.
type CheckerStore interface {
	store.Users
	store.Counters
}

// CheckerConfig configures a Checker.
type CheckerConfig struct {
	// Store holds the users and the failure counters. Required.
	Store CheckerStore
	// Lockout is the brute-force policy; zero fields take defaults.
	Lockout LockoutPolicy
	// HashConcurrency bounds how many hashes are checked at once.
	// Default: the number of CPUs.
	HashConcurrency int
	// SourceShare is how many of the hash slots one source address may
	// hold at once. Default: half of HashConcurrency, at least 1.
	SourceShare int
	// SourceQueue is how many checks of one source address may be in
	// progress (waiting or hashing); more are refused at once with
	// ErrBusy. Default: 4 x HashConcurrency, at least 8 (many users
	// behind one NAT address must still log in).
	SourceQueue int
	// HashWait bounds how long a check waits for a slot. Default 2s.
	HashWait time.Duration
	// FailureFloor is the least time a failed check takes, by waiting (not
	// by hashing). It must exceed the slowest hash the users have.
	// Default 500ms.
	FailureFloor time.Duration
	// Audit receives login events. Default: no-op.
	Audit *zap.Logger
	// Record receives the audit records of refused logins (audit.go).
	// Default: none.
	Record Auditor
	// Refusing, if set, says that logins are to be refused because the
	// audit cannot write: Check then answers ErrBusy (ErrAuditRefusing),
	// before it reads the store.
	Refusing func() bool
	// OnLockout is called when a pair becomes locked. Optional.
	OnLockout func()
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sleep waits a throttle delay or the failure floor. Default:
	// SleepContext.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Checker checks passwords under the brute-force defence (docs/design.md,
// "Token rules"): each attempt is counted atomically before its hash, so
// parallel guesses get no more than sequential ones; a locked pair, an
// unknown user and a disabled user cost no hash; every failure takes the
// same FailureFloor; and the hash slots are shared fairly between source
// addresses. It is safe for concurrent use: its own state is the gate
// (guarded by its mutex and channels) and an atomic counter.
type Checker struct {
	cfg     CheckerConfig
	gate    *gate
	flights inflight
	hashes  atomic.Int64
	// hashing, when set (by tests), is called while a check of source holds
	// a hash slot.
	hashing func(source string)
}

// NewChecker checks cfg and fills its defaults.
func NewChecker(cfg CheckerConfig) (*Checker, error) {
	if cfg.Store == nil {
		return nil, errors.New("password checker needs a store")
	}
	if err := cfg.Lockout.Validate(); err != nil {
		return nil, err
	}
	if cfg.HashConcurrency < 0 || cfg.SourceShare < 0 || cfg.SourceQueue < 0 || cfg.HashWait < 0 || cfg.FailureFloor < 0 {
		return nil, errors.New("password checker bounds must not be negative")
	}
	cfg.Lockout = cfg.Lockout.WithDefaults()
	if cfg.HashConcurrency == 0 {
		cfg.HashConcurrency = runtime.NumCPU()
	}
	if cfg.SourceShare == 0 {
		cfg.SourceShare = max(1, cfg.HashConcurrency/2)
	}
	cfg.SourceShare = min(cfg.SourceShare, cfg.HashConcurrency)
	if cfg.SourceQueue == 0 {
		cfg.SourceQueue = max(8, 4*cfg.HashConcurrency)
	}
	if cfg.HashWait == 0 {
		cfg.HashWait = DefaultHashWait
	}
	if cfg.FailureFloor == 0 {
		cfg.FailureFloor = DefaultFailureFloor
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = SleepContext
	}
	return &Checker{cfg: cfg, gate: newGate(cfg.HashConcurrency, cfg.SourceShare, cfg.SourceQueue)}, nil
}

// Hashes is how many password hashes the checker has verified.
func (c *Checker) Hashes() int64 { return c.hashes.Load() }

// Check verifies a user's password; source is the caller's address (an
// IP, grouped by SourceKey). A locked pair, an unknown user, a disabled
// user and a wrong password all give ErrBadCredentials, after
// FailureFloor. ErrBusy when the source has too many checks in progress or
// no hashing slot came free; any other error is an internal fault. A
// success upgrades a hash with old parameters to the current ones.
func (c *Checker) Check(ctx context.Context, username, password, source string) (store.User, error) {
	if c.cfg.Refusing != nil && c.cfg.Refusing() {
		return store.User{}, fmt.Errorf("%w: %w", ErrBusy, ErrAuditRefusing)
	}
	start := c.cfg.Now()
	src := SourceKey(source)
	if len(username) > MaxUsernameLen || len(password) > maxPasswordLen {
		username = "" // too long to be real: the unknown-user path
	}
	slots, ok := c.gate.enter(src)
	if !ok {
		c.cfg.Audit.Info("login refused", zap.String("reason", "too many logins in progress from the source"), zap.String("source", src))
		c.recordFailure("busy", src, false, "", "")
		return store.User{}, ErrBusy
	}
	defer c.gate.leave(src, slots)

	var user store.User
	known := false
	if username != "" {
		var err error
		user, err = c.cfg.Store.User(ctx, username)
		switch {
		case err == nil:
			known = true
		case !errors.Is(err, store.ErrNotFound):
			return store.User{}, err
		}
	}
	a, err := c.admit(ctx, username, known, src)
	defer a.decided()
	if err != nil {
		return store.User{}, err
	}
	// The failure floor counts from the throttle's end: a throttled
	// failure takes the throttle and the floor, so the throttle shows from
	// the first failure past ThrottleAfter, not only once it outgrows the
	// floor.
	start = start.Add(a.throttled)
	// Every path takes a hash slot, released at once when there is nothing
	// to hash, so that a busy server answers alike whatever the name.
	hashed, err := c.verify(ctx, slots, src, &user, password, !a.locked && known && !user.Disabled)
	if err != nil {
		// Not evaluated: not a failure of anyone's.
		if rerr := c.refund(ctx, a); rerr != nil {
			return store.User{}, rerr
		}
		return store.User{}, err
	}
	var reason string
	switch {
	case a.locked:
		reason = "locked out"
	case !known:
		reason = "unknown user"
	case user.Disabled:
		reason = "user disabled"
	case !hashed:
		reason = "wrong password"
	}
	if reason != "" {
		a.decided() // the failure stands: attempts waiting on the pair may ask again
		return store.User{}, c.failed(ctx, start, a, reason, src, known, user)
	}
	err = c.refund(ctx, a)
	a.decided()
	if err != nil {
		return store.User{}, err
	}
	c.cfg.Audit.Info("login succeeded", zap.String("sub", user.Subject), zap.String("source", src))
	user.Scopes = slices.Clone(user.Scopes)
	return user, nil
}

// FactorMaxFailures is how many wrong second-factor codes, from any
// source, lock a user's second factor for the lockout's duration: the
// (user, source) pair alone would let a guesser with many addresses try
// a million six-digit codes.
const FactorMaxFailures = 10

// CheckFactor checks a second factor of user (a one-time code, a
// recovery code) under the brute-force defence of its password: counted
// against the same (user, source) pair, user and source, so that guessing
// codes throttles and locks as guessing passwords does; and against the
// user's factor alone, which locks after FactorMaxFailures failures from
// any number of sources (only one who knows the password reaches a
// factor). It takes a slot of the source's checks in progress, as a
// password check does. check runs only when neither is locked, and
// reports whether the factor was right. ErrBadCredentials for a lock or
// a wrong factor, after FailureFloor; ErrBusy when the source has too many
// checks in progress or the audit refuses; check's error, with nothing
// counted.
func (c *Checker) CheckFactor(ctx context.Context, user store.User, source string, check func(context.Context) (bool, error)) error {
	if c.cfg.Refusing != nil && c.cfg.Refusing() {
		return fmt.Errorf("%w: %w", ErrBusy, ErrAuditRefusing)
	}
	start := c.cfg.Now()
	src := SourceKey(source)
	slots, ok := c.gate.enter(src)
	if !ok {
		c.cfg.Audit.Info("second factor refused", zap.String("reason", "too many checks in progress from the source"), zap.String("source", src))
		return ErrBusy
	}
	defer c.gate.leave(src, slots)
	a, err := c.admit(ctx, user.Username, true, src)
	defer a.decided()
	if err != nil {
		return err
	}
	start = start.Add(a.throttled)
	if !a.locked && c.cfg.Lockout.enabled() {
		p := c.cfg.Lockout
		key := "factor:" + user.Username
		cnt, admitted, err := c.cfg.Store.Admit(ctx, key, c.cfg.Now(), p.Window, FactorMaxFailures, p.Duration)
		if err != nil {
			if rerr := c.refund(ctx, a); rerr != nil {
				return rerr
			}
			return err
		}
		if admitted {
			a.keys, a.counted, a.limits = append(a.keys, key), append(a.counted, cnt), append(a.limits, FactorMaxFailures)
		}
		a.locked = !admitted
	}
	reason := "locked out"
	if !a.locked {
		ok, err := check(ctx)
		if err != nil {
			if rerr := c.refund(ctx, a); rerr != nil {
				return rerr
			}
			return err
		}
		reason = ""
		if !ok {
			reason = "wrong second factor"
		}
	}
	if reason != "" {
		a.decided()
		return c.failed(ctx, start, a, reason, src, true, user)
	}
	err = c.refund(ctx, a)
	a.decided()
	return err
}

// failed logs a failure and waits until FailureFloor after start.
func (c *Checker) failed(ctx context.Context, start time.Time, a attempt, reason, src string, known bool, user store.User) error {
	if a.setLock {
		c.cfg.Audit.Warn("login locked out", zap.String("source", src),
			zap.Int("failures", a.pair.Count), zap.Time("until", a.pair.LockedUntil))
		if c.cfg.OnLockout != nil {
			c.cfg.OnLockout()
		}
	}
	fields := []zap.Field{zap.String("reason", reason), zap.String("source", src)}
	if known {
		// Only a known user's name: an unknown "username" is often a
		// password typed in the wrong field.
		fields = append(fields, zap.String("sub", user.Subject), zap.String("username", user.Username))
	}
	c.cfg.Audit.Info("login failed", fields...)
	c.recordFailure(reason, src, known, user.Subject, user.Username)
	if rest := c.cfg.FailureFloor - c.cfg.Now().Sub(start); rest > 0 {
		_ = c.cfg.Sleep(ctx, rest) // a caller gone early gets its answer early
	}
	return fmt.Errorf("%w (%s)", ErrBadCredentials, reason)
}

// verify takes a hash slot, waiting at most HashWait, and checks user's
// hash when hash is set; a success with an outdated hash stores a current
// one. Without hash it releases the slot at once and reports false.
func (c *Checker) verify(ctx context.Context, slots *sourceSlots, src string, user *store.User, password string, hash bool) (bool, error) {
	waitCtx, cancel := context.WithTimeout(ctx, c.cfg.HashWait)
	defer cancel()
	if err := c.gate.acquire(waitCtx, slots); err != nil {
		return false, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	defer c.gate.release(slots)
	if !hash {
		return false, nil
	}
	if c.hashing != nil {
		c.hashing(src)
	}
	c.hashes.Add(1)
	ok, err := VerifyPassword(user.PasswordHash, password)
	if err != nil || !ok || !NeedsRehash(user.PasswordHash) {
		return ok, err
	}
	if upgraded, err := HashPassword(password); err == nil {
		err = c.cfg.Store.ReplacePasswordHash(ctx, user.Username, user.PasswordHash, upgraded, c.cfg.Now())
		switch {
		case err == nil:
			user.PasswordHash = upgraded
			c.cfg.Audit.Info("password hash upgraded", zap.String("sub", user.Subject))
		case !errors.Is(err, store.ErrNotFound): // ErrNotFound: changed meanwhile, keep that
			c.cfg.Audit.Warn("upgrading a password hash", zap.String("sub", user.Subject), zap.Error(err))
		}
	}
	return true, nil
}

// attempt is what admission counted for one check.
type attempt struct {
	locked  bool // the pair was locked: nothing was counted
	setLock bool // this attempt locked the pair
	keys    []string
	counted []store.Counter // the admitted counters of keys, to refund
	limits  []int
	pair    store.Counter
	done    func() // ends the pair's flight; nil when none was started
	// throttled is the throttle delay the attempt waited.
	throttled time.Duration
}

// decided ends the attempt's flight, once: from then on attempts waiting
// on the pair ask again.
func (a *attempt) decided() {
	if a.done != nil {
		a.done()
		a.done = nil
	}
}

// admit counts the attempt before its hash: against the (user, source)
// pair, which may lock, and against the user and the source, which only
// throttle; then it waits the throttle delay that the counts, in-flight
// attempts included, call for. A name that is no user is counted in one
// of unknownBuckets buckets and has no pair, so random names add no rows
// and a lock tells nothing (every failure answers alike).
func (c *Checker) admit(ctx context.Context, username string, known bool, src string) (attempt, error) {
	p := c.cfg.Lockout
	var a attempt
	if !p.enabled() {
		return a, nil
	}
	// The user (a bucket of them for a name that is no user) and the
	// source: counted and throttled alike on every path, locked or not,
	// so that no answer is told apart by its time.
	now := c.cfg.Now()
	userKey := "user?:" + bucket(username)
	if known {
		userKey = "user:" + username
	}
	worst := 0
	for _, key := range []string{userKey, "src:" + src} {
		cnt, _, err := c.cfg.Store.Admit(ctx, key, now, p.Window, noLock, 0)
		if err != nil {
			return a, err
		}
		a.keys, a.counted, a.limits = append(a.keys, key), append(a.counted, cnt), append(a.limits, noLock)
		worst = max(worst, cnt.Count-1) // the failures before this attempt
	}
	if delay := p.throttleDelay(worst); delay > 0 {
		if err := c.cfg.Sleep(ctx, delay); err != nil {
			return a, err
		}
		a.throttled = delay
	}
	if !known {
		return a, nil
	}
	// The pair, which locks: asked last, so that an admitted attempt goes
	// straight to its hash and those waiting on it wait for no throttle.
	pairKey := "pair:" + username + "\x00" + src
	version := c.flights.join(pairKey)
	now = c.cfg.Now()
	pair, admitted, err := c.cfg.Store.Admit(ctx, pairKey, now, p.Window, p.MaxFailures, p.Duration)
	if !admitted {
		c.flights.refused(pairKey)
	}
	if err != nil {
		return a, err
	}
	if !admitted {
		// Attempts in flight may have filled the count: each time one is
		// decided (a success takes its count back), ask again, for as
		// long as an admitted attempt may take to be decided.
		waitCtx, cancel := context.WithTimeout(ctx, 2*c.cfg.HashWait)
		for again := true; !admitted && again; {
			if version, again = c.flights.again(waitCtx, pairKey, version); again {
				now = c.cfg.Now()
				pair, admitted, err = c.cfg.Store.Admit(ctx, pairKey, now, p.Window, p.MaxFailures, p.Duration)
				if !admitted {
					c.flights.refused(pairKey)
				}
				if err != nil {
					cancel()
					return a, err
				}
			}
		}
		cancel()
	}
	if !admitted {
		a.locked = true
		return a, nil
	}
	a.done = func() { c.flights.decided(pairKey) }
	a.pair, a.setLock = pair, pair.Locked(now)
	a.keys, a.counted, a.limits = append(a.keys, pairKey), append(a.counted, pair), append(a.limits, p.MaxFailures)
	return a, nil
}

// refund takes back what admit counted for an attempt that did not fail.
func (c *Checker) refund(ctx context.Context, a attempt) error {
	for i, key := range a.keys {
		if err := c.cfg.Store.Refund(ctx, key, a.counted[i], a.limits[i]); err != nil {
			return err
		}
	}
	return nil
}

// bucket is the counter bucket of a name that is no user.
func bucket(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return strconv.Itoa(int(h.Sum32() % unknownBuckets))
}

// SleepContext waits d or until ctx ends.
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
