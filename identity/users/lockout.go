package users

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Defaults of LockoutPolicy.
const (
	DefaultMaxFailures   = 5
	DefaultLockDuration  = 15 * time.Minute
	DefaultWindow        = 15 * time.Minute
	DefaultThrottleAfter = 3
	DefaultBaseDelay     = 250 * time.Millisecond
	DefaultMaxDelay      = 3 * time.Second
)

// LockoutPolicy is the brute-force defence (docs/design.md, "Token rules"): a
// (user, source) pair is locked after MaxFailures failures inside Window,
// for Duration; failures per source and per user beyond ThrottleAfter
// slow every later attempt for that source or user (up to MaxDelay), but
// never lock anyone out.
type LockoutPolicy struct {
	// MaxFailures locks a (user, source) pair. Default 5; negative
	// disables lockout and throttling.
	MaxFailures int
	// Duration is how long a lockout lasts. Default 15m.
	Duration time.Duration
	// Window is how long failures are remembered. Default 15m.
	Window time.Duration
	// ThrottleAfter is how many failures per source or per user pass
	// without delay. Default 3.
	ThrottleAfter int
	// BaseDelay is the first delay; each further failure doubles it.
	// Default 250ms.
	BaseDelay time.Duration
	// MaxDelay caps the delay. Default 3s.
	MaxDelay time.Duration
}

// Validate checks p; zero fields take defaults.
func (p LockoutPolicy) Validate() error {
	if p.Duration < 0 || p.Window < 0 || p.BaseDelay < 0 || p.MaxDelay < 0 {
		return errors.New("lockout durations must not be negative")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", p.Duration}, {"window", p.Window}} {
		// In Caddy's JSON a bare number is nanoseconds: 900 meant as
		// seconds would lock nobody out.
		if d.v > 0 && d.v < time.Second {
			return fmt.Errorf("lockout: %s %v is under a second and would lock nobody out (in JSON a bare number is nanoseconds: write \"15m\")", d.name, d.v)
		}
	}
	if p.ThrottleAfter < 0 {
		return fmt.Errorf("lockout: throttle_after must not be negative, got %d", p.ThrottleAfter)
	}
	if p.BaseDelay > 0 && p.MaxDelay > 0 && p.BaseDelay > p.MaxDelay {
		return fmt.Errorf("lockout: base delay %v is longer than the max delay %v", p.BaseDelay, p.MaxDelay)
	}
	return nil
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p LockoutPolicy) WithDefaults() LockoutPolicy {
	if p.MaxFailures == 0 {
		p.MaxFailures = DefaultMaxFailures
	}
	if p.Duration <= 0 {
		p.Duration = DefaultLockDuration
	}
	if p.Window <= 0 {
		p.Window = DefaultWindow
	}
	if p.ThrottleAfter <= 0 {
		p.ThrottleAfter = DefaultThrottleAfter
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	return p
}

// enabled reports whether the policy locks and throttles at all.
func (p LockoutPolicy) enabled() bool { return p.MaxFailures > 0 }

// throttleDelay is the delay of an attempt made after failures failures:
// none for the first ThrottleAfter, then BaseDelay, doubled for each
// further failure, capped at MaxDelay. With the defaults the 4th attempt
// waits 250ms, the 5th 500ms, the 6th 1s. It comes before the attempt and
// before the failure floor, which a failure then waits as well.
func (p LockoutPolicy) throttleDelay(failures int) time.Duration {
	over := failures - p.ThrottleAfter + 1
	if over <= 0 {
		return 0
	}
	d := p.BaseDelay
	for i := 1; i < over && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// SourceKey groups a client address: IPv4 as is, IPv6 by its /64 (one
// host usually holds a whole /64).
func SourceKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
