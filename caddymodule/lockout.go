package caddymodule

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/identity"
)

// Lockout is the brute-force defence of the password grant. A (user, source)
// pair is locked out after max_failures failed logins inside window, for
// duration; beyond throttle_after failures per source or per user, every
// later attempt of that source or user waits (base_delay, doubling up to
// max_delay), so a stranger can slow a user's logins but never lock the
// user out. The source is Caddy's client IP, which honours the server's
// trusted_proxies; IPv6 addresses count by their /64. Locked, unknown and
// wrong-password answers are the same.
type Lockout struct {
	// MaxFailures is how many failures lock a (user, source) pair. Default
	// 5. Negative (Caddyfile: "lockout off") disables lockout and
	// throttling: then only the password hash's cost slows guessing.
	MaxFailures int `json:"max_failures,omitempty"`

	// Duration is how long a lockout lasts. Default 15m.
	Duration caddy.Duration `json:"duration,omitempty"`

	// Window is how long failures are remembered. Default 15m.
	Window caddy.Duration `json:"window,omitempty"`

	// ThrottleAfter is how many failures per source or per user pass
	// without delay. Default 3.
	ThrottleAfter int `json:"throttle_after,omitempty"`

	// BaseDelay is the delay after the first failure past throttle_after;
	// each further failure doubles it. Default 250ms.
	BaseDelay caddy.Duration `json:"base_delay,omitempty"`

	// MaxDelay caps the delay. Default 3s.
	MaxDelay caddy.Duration `json:"max_delay,omitempty"`
}

// policy converts l; nil is the default policy.
func (l *Lockout) policy() identity.LockoutPolicy {
	if l == nil {
		return identity.LockoutPolicy{}
	}
	return identity.LockoutPolicy{
		MaxFailures:   l.MaxFailures,
		Duration:      time.Duration(l.Duration),
		Window:        time.Duration(l.Window),
		ThrottleAfter: l.ThrottleAfter,
		BaseDelay:     time.Duration(l.BaseDelay),
		MaxDelay:      time.Duration(l.MaxDelay),
	}
}

// validate checks l.
func (l *Lockout) validate() error {
	if l == nil {
		return nil
	}
	if err := errors.Join(
		checkDuration("lockout.duration", l.Duration),
		checkDuration("lockout.window", l.Window),
		checkDuration("lockout.base_delay", l.BaseDelay),
		checkDuration("lockout.max_delay", l.MaxDelay),
	); err != nil {
		return err
	}
	if l.ThrottleAfter < 0 {
		return fmt.Errorf("lockout.throttle_after must not be negative, got %d", l.ThrottleAfter)
	}
	if l.BaseDelay > 0 && l.MaxDelay > 0 && l.BaseDelay > l.MaxDelay {
		return fmt.Errorf("lockout: base_delay %v is longer than max_delay %v",
			time.Duration(l.BaseDelay), time.Duration(l.MaxDelay))
	}
	return nil
}

// clientIP is the source address of r for the brute-force defence: Caddy's
// client IP, which honours the server's trusted_proxies, else the host of
// RemoteAddr.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
