package identity

import (
	"context"
	"math"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// noLock is the limit of counters that only throttle.
const noLock = math.MaxInt32

func applyLockoutDefaults(p *LockoutPolicy) {
	if p.MaxFailures == 0 {
		p.MaxFailures = 5
	}
	if p.Duration <= 0 {
		p.Duration = 15 * time.Minute
	}
	if p.Window <= 0 {
		p.Window = 15 * time.Minute
	}
	if p.ThrottleAfter <= 0 {
		p.ThrottleAfter = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 250 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 3 * time.Second
	}
}

// remoteHost is the default ClientIP: the host of RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// sourceKey groups a client address: IPv4 as is, IPv6 by its /64 (one
// host usually holds a whole /64).
func sourceKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// guard is the brute-force state of one login attempt.
type guard struct {
	s                  *Server
	pair, user, source string
}

func (s *Server) guardFor(r *http.Request, username string) *guard {
	src := sourceKey(s.cfg.ClientIP(r))
	return &guard{s: s, pair: "pair:" + username + "\x00" + src, user: "user:" + username, source: "src:" + src}
}

func (g *guard) enabled() bool { return g.s.cfg.Lockout.MaxFailures > 0 }

// check returns whether the pair is locked, after waiting the throttle
// delay that the source's and the user's recent failures call for.
func (g *guard) check(ctx context.Context) (locked bool, err error) {
	if !g.enabled() {
		return false, nil
	}
	p := g.s.cfg.Lockout
	now := g.s.cfg.Now()
	pair, err := g.s.store.Counter(ctx, g.pair)
	if err != nil {
		return false, err
	}
	worst := 0
	for _, key := range []string{g.user, g.source} {
		c, err := g.s.store.Counter(ctx, key)
		if err != nil {
			return false, err
		}
		if now.Sub(c.WindowStart) < p.Window && c.Count > worst {
			worst = c.Count
		}
	}
	if delay := throttleDelay(p, worst); delay > 0 {
		if err := g.s.sleep(ctx, delay); err != nil {
			return false, err
		}
	}
	return pair.Locked(now), nil
}

// throttleDelay is BaseDelay doubled for each failure past ThrottleAfter,
// capped at MaxDelay.
func throttleDelay(p LockoutPolicy, failures int) time.Duration {
	over := failures - p.ThrottleAfter
	if over <= 0 {
		return 0
	}
	d := p.BaseDelay
	for i := 1; i < over && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// failed counts a failure against the pair, the user and the source.
func (g *guard) failed(ctx context.Context) error {
	if !g.enabled() {
		return nil
	}
	p := g.s.cfg.Lockout
	now := g.s.cfg.Now()
	before, err := g.s.store.Counter(ctx, g.pair)
	if err != nil {
		return err
	}
	after, err := g.s.store.AddFailure(ctx, g.pair, now, p.Window, p.MaxFailures, p.Duration)
	if err != nil {
		return err
	}
	if after.Locked(now) && !before.Locked(now) {
		g.s.audit.Warn("login locked out", zap.String("source", g.source[len("src:"):]),
			zap.Int("failures", after.Count), zap.Time("until", after.LockedUntil))
		if m := g.s.cfg.Metrics; m != nil {
			m.Lockout()
		}
	}
	for _, key := range []string{g.user, g.source} {
		if _, err := g.s.store.AddFailure(ctx, key, now, p.Window, noLock, 0); err != nil {
			return err
		}
	}
	return nil
}

// succeeded clears the pair's failures.
func (g *guard) succeeded(ctx context.Context) error {
	if !g.enabled() {
		return nil
	}
	return g.s.store.ResetCounter(ctx, g.pair)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
