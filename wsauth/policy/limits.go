package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults of the entitlement limits: what one session may hold and send
// unless the gateway's configuration says otherwise.
const (
	// DefaultSubscriptions bounds a session's live subscriptions.
	DefaultSubscriptions = 500
	// DefaultMessagesPerSecond is the rate at which a session's client
	// messages are forwarded, on average.
	DefaultMessagesPerSecond = 50
	// DefaultBurst is how many client messages a session may send at once
	// above that rate.
	DefaultBurst = 100
	// DefaultSessions bounds the live sessions of one user on a gateway.
	DefaultSessions = 64
)

// Limits are a session's entitlement limits. A zero field is "not set":
// in the gateway's limits (wsauth.Limits.Default) it takes its Default*, in
// a LimitOverride it leaves the other limits to decide.
type Limits struct {
	// Subscriptions bounds the subscriptions a session holds at once
	// (Controller and Topic with its "!" arguments, after Sub and before
	// Unsub); a Sub for a new one over it is answered Error/Limited and
	// not forwarded. Default DefaultSubscriptions.
	Subscriptions int `json:"subscriptions,omitempty"`
	// MessagesPerSecond and Burst are a token bucket over the session's
	// client messages other than Auth ones (which have their own bounds:
	// the gateway's auth_max_messages, the verifier's): Burst messages at
	// once, then MessagesPerSecond on average. A message over it is answered
	// Error/Limited and not forwarded. Defaults DefaultMessagesPerSecond
	// and DefaultBurst.
	MessagesPerSecond float64 `json:"messages_per_second,omitempty"`
	Burst             int     `json:"burst,omitempty"`
	// Sessions bounds the live sessions of one user (token subject) on
	// this gateway, each with its own backend connection: an
	// authentication past it is refused (Reject; by the upgrade's
	// Authorization header, close 1008), so one user cannot take the
	// backend's connections nor multiply the other limits. The limit that
	// applies is the new session's. Default DefaultSessions.
	Sessions int `json:"sessions,omitempty"`
}

// LimitOverride raises the limits of the sessions it matches: those whose
// token was issued to ClientID, or those holding Scope (after require_tls
// withheld any). Exactly one of ClientID and Scope is set. Each limit it
// sets must be above the default's: a session gets the largest of the
// default and its overrides, so an override cannot lower a limit.
type LimitOverride struct {
	ClientID string `json:"client_id,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Limits
}

// maxOf is, field by field, the larger of l and o.
func (l Limits) maxOf(o Limits) Limits {
	return Limits{
		Subscriptions:     max(l.Subscriptions, o.Subscriptions),
		MessagesPerSecond: max(l.MessagesPerSecond, o.MessagesPerSecond),
		Burst:             max(l.Burst, o.Burst),
		Sessions:          max(l.Sessions, o.Sessions),
	}
}

func (l Limits) validate(where string) []error {
	var errs []error
	if l.Subscriptions < 0 {
		errs = append(errs, fmt.Errorf("%s: subscriptions is negative", where))
	}
	if l.MessagesPerSecond < 0 || math.IsNaN(l.MessagesPerSecond) || math.IsInf(l.MessagesPerSecond, 0) {
		errs = append(errs, fmt.Errorf("%s: messages_per_second is negative or not finite", where))
	}
	if l.Burst < 0 {
		errs = append(errs, fmt.Errorf("%s: burst is negative", where))
	}
	if l.Sessions < 0 {
		errs = append(errs, fmt.Errorf("%s: sessions is negative", where))
	}
	return errs
}

// ValidateLimits checks a gateway's limits and their overrides (the
// Default and Overrides of a wsauth.Limits) and changes nothing.
func ValidateLimits(limits Limits, overrides []LimitOverride) error {
	errs := limits.validate("limits")
	for i, o := range overrides {
		where := fmt.Sprintf("limit override %d", i)
		errs = append(errs, o.validate(where)...)
		if (o.ClientID == "") == (o.Scope == "") {
			errs = append(errs, fmt.Errorf("%s: needs exactly one of client_id and scope", where))
		}
		// An override only raises (LimitsFor takes the largest): one
		// at or below the default, meant to throttle, would do nothing.
		def := Limits{Subscriptions: cmp.Or(limits.Subscriptions, DefaultSubscriptions),
			MessagesPerSecond: cmp.Or(limits.MessagesPerSecond, DefaultMessagesPerSecond), Burst: cmp.Or(limits.Burst, DefaultBurst),
			Sessions: cmp.Or(limits.Sessions, DefaultSessions)}
		for _, f := range []struct {
			name      string
			set, over bool
			v, d      float64
		}{
			{"subscriptions", o.Subscriptions != 0, o.Subscriptions > def.Subscriptions, float64(o.Subscriptions), float64(def.Subscriptions)},
			{"messages_per_second", o.MessagesPerSecond != 0, o.MessagesPerSecond > def.MessagesPerSecond, o.MessagesPerSecond, def.MessagesPerSecond},
			{"burst", o.Burst != 0, o.Burst > def.Burst, float64(o.Burst), float64(def.Burst)},
			{"sessions", o.Sessions != 0, o.Sessions > def.Sessions, float64(o.Sessions), float64(def.Sessions)},
		} {
			if f.set && !f.over {
				errs = append(errs, fmt.Errorf("%s: %s %v is not above the default %v: an override only raises a limit", where, f.name, f.v, f.d))
			}
		}
	}
	return errors.Join(errs...)
}

// LimitsFor is the effective limits of a session whose token was issued
// to clientID and holds scopes: the largest, field by field, of limits (the
// default, with its Default* filled in) and of every override matching the
// session.
func LimitsFor(limits Limits, overrides []LimitOverride, clientID string, scopes []string) Limits {
	l := limits
	for _, o := range overrides {
		if o.ClientID != "" && o.ClientID == clientID || o.Scope != "" && slices.Contains(scopes, o.Scope) {
			l = l.maxOf(o.Limits)
		}
	}
	return l
}
