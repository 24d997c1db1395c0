package users

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
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
	// ErrBusy: no hashing slot came free in time.
	ErrBusy = errors.New("the server is busy, try again")
)

// Bounds of a password check.
const (
	// MaxUsernameLen bounds the username a caller may send.
	MaxUsernameLen = 255
	// DefaultHashWait bounds how long a check waits for a hashing slot.
	DefaultHashWait = 10 * time.Second
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
	// HashWait bounds how long a check waits for a slot. Default 10s.
	HashWait time.Duration
	// Audit receives login events. Default: no-op.
	Audit *zap.Logger
	// OnLockout is called when a pair becomes locked. Optional.
	OnLockout func()
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sleep waits the throttle delay. Default: a timer that ends with ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Checker checks passwords under the brute-force defence. It is safe for
// concurrent use; its only mutable state is the hash-slot semaphore and a
// counter, both concurrency-safe.
type Checker struct {
	cfg       CheckerConfig
	dummyHash string
	slots     chan struct{}
	hashes    atomic.Int64
}

// NewChecker fills cfg's defaults and prepares the dummy hash that unknown
// users cost.
func NewChecker(cfg CheckerConfig) (*Checker, error) {
	if cfg.Store == nil {
		return nil, errors.New("password checker needs a store")
	}
	if err := cfg.Lockout.Validate(); err != nil {
		return nil, err
	}
	cfg.Lockout = cfg.Lockout.WithDefaults()
	if cfg.HashConcurrency <= 0 {
		cfg.HashConcurrency = runtime.NumCPU()
	}
	if cfg.HashWait <= 0 {
		cfg.HashWait = DefaultHashWait
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
	dummy, err := HashPassword("gatehouse-dummy-password")
	if err != nil {
		return nil, fmt.Errorf("preparing dummy password hash: %w", err)
	}
	return &Checker{cfg: cfg, dummyHash: dummy, slots: make(chan struct{}, cfg.HashConcurrency)}, nil
}

// Hashes is how many password hashes the checker has computed.
func (c *Checker) Hashes() int64 { return c.hashes.Load() }

// Check verifies a user's password; source is the caller's address (an
// IP, grouped by SourceKey). A locked pair, an unknown user, a disabled
// user and a wrong password all give ErrBadCredentials after the same
// work: one password hash each. ErrBusy when no hashing slot came free;
// any other error is an internal fault.
func (c *Checker) Check(ctx context.Context, username, password, source string) (store.User, error) {
	if len(username) > MaxUsernameLen || len(password) > maxPasswordLen {
		// Too long to be real: take the unknown-user path, with the same
		// work as any other failure (a bounded password, the dummy hash).
		username, password = "", password[:min(len(password), maxPasswordLen)]
	}
	g := c.guardFor(username, source)
	locked, err := g.check(ctx)
	if err != nil {
		return store.User{}, err
	}
	var user store.User
	lookupErr := store.ErrNotFound
	if username != "" && !locked {
		user, lookupErr = c.cfg.Store.User(ctx, username)
	}
	if lookupErr != nil && !errors.Is(lookupErr, store.ErrNotFound) {
		return store.User{}, lookupErr
	}
	hash := user.PasswordHash
	if lookupErr != nil {
		hash = c.dummyHash
	}
	ok, err := c.verify(ctx, hash, password)
	if err != nil {
		return store.User{}, err
	}
	var reason string
	switch {
	case locked:
		reason = "locked out"
	case lookupErr != nil:
		reason = "unknown user"
	case !ok:
		reason = "wrong password"
	case user.Disabled:
		reason = "user disabled"
	}
	if reason != "" {
		if !locked {
			if err := g.failed(ctx); err != nil {
				return store.User{}, err
			}
		}
		fields := []zap.Field{zap.String("reason", reason), zap.String("source", g.source)}
		if lookupErr == nil {
			// Only a known user's name: an unknown "username" is often a
			// password typed in the wrong field.
			fields = append(fields, zap.String("sub", user.Subject), zap.String("username", user.Username))
		}
		c.cfg.Audit.Info("login failed", fields...)
		return store.User{}, fmt.Errorf("%w (%s)", ErrBadCredentials, reason)
	}
	if err := g.succeeded(ctx); err != nil {
		return store.User{}, err
	}
	c.cfg.Audit.Info("login succeeded", zap.String("sub", user.Subject), zap.String("source", g.source))
	user.Scopes = slices.Clone(user.Scopes)
	return user, nil
}

// verify checks a hash under the concurrency limit, waiting at most
// HashWait for a slot.
func (c *Checker) verify(ctx context.Context, hash, password string) (bool, error) {
	waitCtx, cancel := context.WithTimeout(ctx, c.cfg.HashWait)
	defer cancel()
	select {
	case c.slots <- struct{}{}:
	case <-waitCtx.Done():
		return false, fmt.Errorf("%w: %w", ErrBusy, waitCtx.Err())
	}
	defer func() { <-c.slots }()
	c.hashes.Add(1)
	return VerifyPassword(hash, password)
}

// guard is the brute-force state of one login attempt: the counter keys of
// the (user, source) pair, the user and the source.
type guard struct {
	c                  *Checker
	source             string // the grouped source address
	pair, user, srcKey string // counter keys
}

func (c *Checker) guardFor(username, source string) *guard {
	src := SourceKey(source)
	return &guard{c: c, source: src, pair: "pair:" + username + "\x00" + src, user: "user:" + username, srcKey: "src:" + src}
}

// check returns whether the pair is locked, after waiting the throttle
// delay that the source's and the user's recent failures call for.
func (g *guard) check(ctx context.Context) (locked bool, err error) {
	p := g.c.cfg.Lockout
	if !p.enabled() {
		return false, nil
	}
	st := g.c.cfg.Store
	now := g.c.cfg.Now()
	pair, err := st.Counter(ctx, g.pair)
	if err != nil {
		return false, err
	}
	worst := 0
	for _, key := range []string{g.user, g.srcKey} {
		c, err := st.Counter(ctx, key)
		if err != nil {
			return false, err
		}
		if now.Sub(c.WindowStart) < p.Window && c.Count > worst {
			worst = c.Count
		}
	}
	if delay := p.throttleDelay(worst); delay > 0 {
		if err := g.c.cfg.Sleep(ctx, delay); err != nil {
			return false, err
		}
	}
	return pair.Locked(now), nil
}

// failed counts a failure against the pair, the user and the source.
func (g *guard) failed(ctx context.Context) error {
	p := g.c.cfg.Lockout
	if !p.enabled() {
		return nil
	}
	st := g.c.cfg.Store
	now := g.c.cfg.Now()
	before, err := st.Counter(ctx, g.pair)
	if err != nil {
		return err
	}
	after, err := st.AddFailure(ctx, g.pair, now, p.Window, p.MaxFailures, p.Duration)
	if err != nil {
		return err
	}
	if after.Locked(now) && !before.Locked(now) {
		g.c.cfg.Audit.Warn("login locked out", zap.String("source", g.source),
			zap.Int("failures", after.Count), zap.Time("until", after.LockedUntil))
		if g.c.cfg.OnLockout != nil {
			g.c.cfg.OnLockout()
		}
	}
	for _, key := range []string{g.user, g.srcKey} {
		if _, err := st.AddFailure(ctx, key, now, p.Window, noLock, 0); err != nil {
			return err
		}
	}
	return nil
}

// succeeded clears the pair's failures.
func (g *guard) succeeded(ctx context.Context) error {
	if !g.c.cfg.Lockout.enabled() {
		return nil
	}
	return g.c.cfg.Store.ResetCounter(ctx, g.pair)
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
