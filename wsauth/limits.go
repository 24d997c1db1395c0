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
// keeps for its subscriptions, in total (Limits.MaxSubscriptionBytes).
const DefaultMaxSubscriptionBytes = 1 << 20

// Limits are what one session may hold and send: its entitlement limits,
// raised for some sessions, and the bytes of the Sub messages it keeps.
type Limits struct {
	// Default are every session's entitlement limits; zero fields take
	// their policy.Default*.
	Default policy.Limits
	// Overrides raise the limits of some sessions: a session's effective
	// limits are, field by field, the largest of Default and of every
	// override that matches it, recomputed on each (re-)authentication.
	// Default none.
	Overrides []policy.LimitOverride
	// MaxSubscriptionBytes bounds, per session, the total size of the
	// Sub messages the gateway keeps to re-send when a lapsed session
	// authenticates again, each with its topic once more (the key it is
	// kept under); a Sub over it is answered Error/Limited. A
	// session with many subscriptions and large Sub messages may need
	// more. Default DefaultMaxSubscriptionBytes.
	MaxSubscriptionBytes int64
}

// Validate checks l and changes nothing.
func (l *Limits) Validate() error {
	return errors.Join(
		policy.ValidateLimits(l.Default, l.Overrides),
		negative("max_subscription_bytes", l.MaxSubscriptionBytes))
}

func (l Limits) withDefaults() Limits {
	l.Default.Subscriptions = or(l.Default.Subscriptions, policy.DefaultSubscriptions)
	l.Default.MessagesPerSecond = or(l.Default.MessagesPerSecond, policy.DefaultMessagesPerSecond)
	l.Default.Burst = or(l.Default.Burst, policy.DefaultBurst)
	l.Default.Sessions = or(l.Default.Sessions, policy.DefaultSessions)
	l.Overrides = slices.Clone(l.Overrides)
	l.MaxSubscriptionBytes = or(l.MaxSubscriptionBytes, DefaultMaxSubscriptionBytes)
	return l
}

// limitsFor is the effective limits of a session speaking for id
// (policy.LimitsFor). The limits have their defaults.
func (l *Limits) limitsFor(id *Identity) policy.Limits {
	return policy.LimitsFor(l.Default, l.Overrides, id.ClientID, id.Scopes)
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

// withhold removes from id's scopes those Auth.WithheldScopes names,
// into a new slice (the verifier's is left alone). Used when require_tls
// finds the connection is not secure.
func (a *Auth) withhold(id *Identity) {
	if !slices.ContainsFunc(id.Scopes, func(s string) bool { return slices.Contains(a.WithheldScopes, s) }) {
		return
	}
	id.Scopes = slices.DeleteFunc(slices.Clone(id.Scopes), func(s string) bool { return slices.Contains(a.WithheldScopes, s) })
}
