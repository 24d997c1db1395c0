package device

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// Limits bound user-code entry on the verification page: wrong codes are
// counted per source address, per session and over the whole server, in
// the store (so every instance shares the counts). Each attempt is
// counted before its lookup, atomically, and given back when its code was
// good: parallel guesses get no more than sequential ones.
type Limits struct {
	// PerSource is how many wrong codes one address may enter in Window
	// before it is locked out for Lockout. Default 10.
	PerSource int
	// PerSession is the same per login session. Default 10.
	PerSession int
	// Window is the counting window. Default 15 minutes.
	Window time.Duration
	// Lockout is how long an address or session is refused once over its
	// limit. Default 15 minutes.
	Lockout time.Duration
	// Global is how many wrong codes the whole server takes in Window
	// before entries are refused until the window ends, but for one every
	// GlobalLockout: the bound on a guessing attack spread over many
	// addresses. Default 1000.
	Global int
	// GlobalLockout is how long the server refuses entries once over
	// Global. Default 1 minute.
	GlobalLockout time.Duration
	// AuthorizationsPerSource is how many device authorizations (requests
	// to the device authorization endpoint, each a stored pending code)
	// one address may start in Window; over it the endpoint answers 429
	// slow_down until the window ends. Default 60.
	AuthorizationsPerSource int
	// Authorizations is how many device authorizations the whole server
	// starts in Window; past it the endpoint answers 429 slow_down until
	// the window ends, but for one every GlobalLockout: the bound on
	// pending codes stored by an attacker spread over many addresses (an
	// IPv6 /48 holds 65,536 /64s). Default 10000.
	Authorizations int
}

// DefaultLimits are the limits of a Config that sets none.
var DefaultLimits = Limits{PerSource: 10, PerSession: 10, Window: 15 * time.Minute, Lockout: 15 * time.Minute,
	Global: 1000, GlobalLockout: time.Minute, AuthorizationsPerSource: 60, Authorizations: 10000}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.PerSource > 0 {
		d.PerSource = l.PerSource
	}
	if l.PerSession > 0 {
		d.PerSession = l.PerSession
	}
	if l.Window > 0 {
		d.Window = l.Window
	}
	if l.Lockout > 0 {
		d.Lockout = l.Lockout
	}
	if l.Global > 0 {
		d.Global = l.Global
	}
	if l.AuthorizationsPerSource > 0 {
		d.AuthorizationsPerSource = l.AuthorizationsPerSource
	}
	if l.Authorizations > 0 {
		d.Authorizations = l.Authorizations
	}
	if l.GlobalLockout > 0 {
		d.GlobalLockout = l.GlobalLockout
	}
	return d
}

// Counter keys of the limits.
const (
	keySource         = "device-user-code/source/"
	keySession        = "device-user-code/session/"
	keyGlobal         = "device-user-code/global"
	keyAuthorization  = "device-authorization/source/"
	keyAuthorizations = "device-authorization/global"
)

// ticket is one counted attempt, to give back when the code was good.
type ticket struct {
	key   string
	limit int
	c     store.Counter
}

// admit counts one user-code attempt of the request's source and of
// sess against every limit. allowed is false when one of them refuses: the
// attempts the others counted are given back.
func (e *Endpoint) admit(ctx context.Context, r *http.Request, sess store.Session) (tickets []ticket, allowed bool, err error) {
	l := e.cfg.Limits
	now := e.cfg.Now()
	for _, k := range []struct {
		key     string
		limit   int
		lockout time.Duration
	}{
		{keySource + users.SourceKey(e.cfg.ClientIP(r)), l.PerSource, l.Lockout}, // an IPv6 /64 is one source
		{keySession + sess.ID, l.PerSession, l.Lockout},
		{keyGlobal, l.Global, l.GlobalLockout},
	} {
		c, ok, err := e.cfg.Store.Admit(ctx, k.key, now, l.Window, k.limit, k.lockout)
		if err == nil && ok {
			tickets = append(tickets, ticket{k.key, k.limit, c})
			continue
		}
		e.refund(ctx, tickets)
		return nil, false, err
	}
	return tickets, true, nil
}

// admitAuthorization counts one device authorization of the request's
// source (an IPv6 /64 is one) and of the server, and reports whether it
// is within AuthorizationsPerSource and Authorizations.
func (e *Endpoint) admitAuthorization(ctx context.Context, r *http.Request) (bool, error) {
	l := e.cfg.Limits
	now := e.cfg.Now()
	key := keyAuthorization + users.SourceKey(e.cfg.ClientIP(r))
	c, ok, err := e.cfg.Store.Admit(ctx, key, now, l.Window, l.AuthorizationsPerSource, l.Window)
	if err != nil || !ok {
		return ok, err
	}
	_, ok, err = e.cfg.Store.Admit(ctx, keyAuthorizations, now, l.Window, l.Authorizations, l.GlobalLockout)
	if err == nil && !ok {
		// Refused by the server's bound: the source's count goes back.
		e.refund(ctx, []ticket{{key, l.AuthorizationsPerSource, c}})
	}
	return ok, err
}

// refund gives back the attempts of a good code.
func (e *Endpoint) refund(ctx context.Context, tickets []ticket) {
	for _, t := range tickets {
		if err := e.cfg.Store.Refund(ctx, t.key, t.c, t.limit); err != nil {
			e.cfg.Logger.Warn("giving back a user-code attempt", zap.Error(err))
		}
	}
}
