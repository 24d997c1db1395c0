package wsauth

import (
	"errors"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// CodeLimited answers a client message over an entitlement limit
// (docs/protocol.md, "Message container").
const CodeLimited = "Limited"

// DefaultMaxSubscriptionBytes bounds the copies of Sub messages a session
// keeps for its subscriptions, in total (Config.MaxSubscriptionBytes).
const DefaultMaxSubscriptionBytes = 1 << 20

// validateLimits checks Limits, LimitOverrides and MaxSubscriptionBytes.
func (c *Config) validateLimits() []error {
	var errs []error
	if err := policy.ValidateLimits(c.Limits, c.LimitOverrides); err != nil {
		errs = append(errs, err)
	}
	if c.MaxSubscriptionBytes < 0 {
		errs = append(errs, errors.New("max_subscription_bytes is negative"))
	}
	return errs
}

// limitsFor is the effective limits of a session speaking for id
// (LimitsFor). The config has its defaults.
func (c *Config) limitsFor(id *Identity) policy.Limits {
	return policy.LimitsFor(c.Limits, c.LimitOverrides, id.ClientID, id.Scopes)
}

// authLimits bound the Auth messages of an authenticated session (each
// may cost a signature check or a password hash): a burst of 10, then one
// every 2 seconds, far above a client that re-authenticates before each
// expiry.
var authLimits = policy.Limits{MessagesPerSecond: 0.5, Burst: 10}

// bucket is a session's token bucket over its client messages (the
// client reader's; no lock).
type bucket struct {
	tokens float64
	last   time.Time // zero: full
}

// take takes one message's token at now, false when none is left.
func (b *bucket) take(now time.Time, l *policy.Limits) bool {
	burst := float64(l.Burst)
	if b.last.IsZero() {
		b.tokens = burst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*l.MessagesPerSecond)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// withhold removes from id's scopes those Config.WithheldScopes names,
// into a new slice (the verifier's is left alone). Used when require_tls
// finds the connection is not secure.
func (c *Config) withhold(id *Identity) {
	if !slices.ContainsFunc(id.Scopes, func(s string) bool { return slices.Contains(c.WithheldScopes, s) }) {
		return
	}
	id.Scopes = slices.DeleteFunc(slices.Clone(id.Scopes), func(s string) bool { return slices.Contains(c.WithheldScopes, s) })
}
