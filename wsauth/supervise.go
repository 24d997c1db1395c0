package wsauth

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// maxRecheckTimeout bounds one re-verification of a session's token.
const maxRecheckTimeout = 2 * time.Second

// The gateway's supervisor is one goroutine per Gateway, started with its
// first session and ended by Shutdown: sessions have no timers or
// goroutines of their own for it, so an idle socket costs nothing more.
// Every SuperviseInterval it walks the live sessions and, for each
// authenticated one:
//
//   - ends the authority of an identity whose expiry (Hooks.Now) has
//     passed (lapseLocked);
//   - every RecheckInterval verifies its token again, outside the
//     session's lock: ErrRefused is a revocation, and ends authority as
//     expiry does; a fault changes nothing, and the walk's other
//     verifications wait for the next walk;
//   - when Hooks.RevocationsChanged signals, walks at once and verifies
//     again every session last checked before the signal (one skipped
//     because its lock was busy is due at the next walk);
//   - closes with 1008 a session whose authority lapsed more than
//     ExpiryGrace ago (a recoverable state: never a 4xxx code).
//
// It never waits on a client or a backend: what it sends the client is
// pushed without waiting (push, closeSoon), and a lapse's Unsubs are
// written to the backend by a goroutine of the session's (unsubscribe).
// It takes a session's lock only when free (TryLock). The lock of a
// session whose client reader writes to a backed-up backend leg is held
// for as long as each write waits, walk after walk (a client can keep it
// so, within its limits): such a session is looked at, and a
// verification's outcome applied, by a goroutine of the session's that
// waits for the lock (whenFree), so that an expired or revoked identity
// loses its authority as soon as the write in progress ends, not when a
// walk happens to find the lock free.
func (g *Gateway) supervise(ctx context.Context) {
	tick := time.NewTicker(g.cfg().Live.SuperviseInterval)
	defer tick.Stop()
	var live []*session
	var due []recheck
	var changed <-chan struct{} // nil without RevocationsChanged: never ready
	if g.cfg().Hooks.RevocationsChanged != nil {
		changed = g.cfg().Hooks.RevocationsChanged()
	}
	var changedAt time.Time // sessions checked before it are due
	restarted := g.supStarts.Add(1) > 1
	if restarted {
		// Restarted after a panic (a revocation signalled before it may not
		// have been applied yet) or by Reconfigure (another verifier, whose
		// refusals may differ, and a policy to fit): every session is
		// looked at and checked again, at once.
		changedAt = time.Now()
	}
	for {
		if !restarted {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-changed:
				changed = g.cfg().Hooks.RevocationsChanged()
				changedAt = time.Now()
			}
		}
		restarted = false
		live = g.liveSessions(live)
		now, wall := g.cfg().Hooks.Now(), time.Now()
		for _, s := range live {
			if r, ok := s.inspect(ctx, now, wall, changedAt); ok {
				due = append(due, r)
			}
		}
		g.recheck(ctx, due)
		clear(live) // hold no session past the walk
		clear(due)
		live, due = live[:0], due[:0]
	}
}

// recheck is a token due for verification: the session, and the
// generation of the identity it belongs to.
type recheck struct {
	s     *session
	token string
	gen   uint32
}

// inspect is the supervisor's look at one session at now (Hooks.Now) and
// wall (the system clock): it lapses an expired identity, closes a session
// past its grace, and reports a token due for verification (every
// RecheckInterval, and when it was last checked before changedAt, the
// last change of the verifier's revocations). When the session's lock is
// busy, a goroutine of the session's looks once it is free, at that time,
// and verifies a token due itself.
func (s *session) inspect(ctx context.Context, now, wall, changedAt time.Time) (recheck, bool) {
	if !s.mu.TryLock() {
		s.whenFree(func() {
			s.mu.Lock()
			if r, due := s.inspectLocked(s.g.cfg().Hooks.Now(), time.Now(), changedAt); due {
				s.g.verify(ctx, r, true)
			}
		})
		return recheck{}, false
	}
	return s.inspectLocked(now, wall, changedAt)
}

// liveSessions appends the live sessions to live.
func (g *Gateway) liveSessions(live []*session) []*session {
	g.mu.Lock()
	defer g.mu.Unlock() // a panic here (a test's) leaves the lock free
	for s := range g.sessions {
		contain.Point("ws.gateway_locked")
		live = append(live, s)
	}
	return live
}

// whenFree runs f, which waits for s.mu, on a goroutine of its own: the
// supervisor's work on a session whose lock is busy. Supervisor only. One at a time: while
// one is under way, f is dropped (the work is due again at the next walk:
// the lapse that f would make, or the verification it would record, has
// not happened).
func (s *session) whenFree(f func()) {
	if !s.auth.looking.CompareAndSwap(false, true) {
		return
	}
	// Counted by the gateway, which Shutdown waits for: only the
	// supervisor calls whenFree, and Shutdown waits for it to end first.
	s.g.wg.Add(1)
	contain.Go(s.g.log(), "ws.supervisor", func() {
		defer s.g.wg.Done()
		defer s.auth.looking.Store(false)
		f()
	}, nil)
}

// inspectLocked is inspect with s.mu held; it releases it (in a deferred
// call for the part under it, so that a panic leaves the lock free).
func (s *session) inspectLocked(now, wall, changedAt time.Time) (recheck, bool) {
	r, due, closeIt, lapsed, id := s.inspectUnder(now, wall, changedAt)
	if lapsed != authNone {
		s.lapsed(lapsed, &id, "")
	}
	if closeIt {
		s.g.log().Info("ws session closed", zap.String("reason", "authority lapsed past the grace period"),
			zap.String("user", id.Subject), zap.String("client_id", id.ClientID), zap.String("remote", s.client.remote))
		s.closeSoon(websocket.ClosePolicyViolation)
	}
	return r, due
}

// inspectUnder is the part of inspectLocked under s.mu, which it releases.
func (s *session) inspectUnder(now, wall, changedAt time.Time) (r recheck, due, closeIt bool, lapsed standing, id Identity) {
	defer s.mu.Unlock()
	lapsed = authNone
	s.refitLocked(s.g.cfg()) // a Reconfigure's pass found the lock busy
	switch {
	case s.auth.ended || s.auth.standing == authNone:
	case s.auth.standing == authLive && !s.auth.id.Expiry.IsZero() && !s.auth.id.Expiry.After(now):
		lapsed, id = authExpired, s.auth.id
		s.lapseLocked(lapsed, now)
	case s.auth.standing == authLive:
		if s.auth.id.Token != "" && (wall.Sub(s.auth.checkedAt) >= s.g.cfg().Live.RecheckInterval || s.auth.checkedAt.Before(changedAt)) {
			r, due = recheck{s: s, token: s.auth.id.Token, gen: s.auth.gen}, true
		}
	case !s.auth.graceClosed && now.Sub(s.auth.lapsedAt) > s.g.cfg().Live.ExpiryGrace:
		s.auth.graceClosed, closeIt, id = true, true, s.auth.id
	}
	return r, due, closeIt, lapsed, id
}

// recheck verifies each token in due, one at a time (verify); a fault
// stops the walk's verifications.
func (g *Gateway) recheck(ctx context.Context, due []recheck) {
	for _, r := range due {
		if !g.verify(ctx, r, false) {
			return
		}
	}
}

// verify verifies r's token within min(RecheckInterval,
// maxRecheckTimeout). A refusal lapses the session (revoked, or expired if
// its expiry has passed meanwhile) unless it has re-authenticated since;
// an acceptance is recorded as a check at the time the verifier was asked
// (a revocation signalled during the verification makes the token due
// again). With wait, the outcome waits for the session's lock; else, when
// the lock is busy, a goroutine of the session's applies it (whenFree).
// false on a fault or at Shutdown.
func (g *Gateway) verify(ctx context.Context, r recheck, wait bool) bool {
	at := time.Now()
	vctx, cancel := context.WithTimeout(ctx, min(g.cfg().Live.RecheckInterval, maxRecheckTimeout))
	id, err := g.cfg().Hooks.Verifier.VerifyAccessToken(vctx, r.token)
	cancel()
	switch {
	case err == nil && g.cfg().Venues != nil:
		r.s.narrow(r.gen, id.Entitlements, at, wait)
	case err == nil:
		r.s.checked(r.gen, at, wait)
	case errors.Is(err, ErrRefused):
		r.s.revoke(r.gen, refusalReason(err), wait)
	case ctx.Err() != nil:
		return false // Shutdown
	default:
		g.log().Warn("ws token recheck failed", zap.Error(err))
		return false
	}
	return true
}

// lockFor takes s.mu for the supervisor's work f: at once with wait, else
// only when free; when it is busy, f runs with wait on a goroutine of the
// session's (whenFree). false when the caller does not hold the lock.
func (s *session) lockFor(wait bool, f func()) bool {
	switch {
	case wait:
		s.mu.Lock()
	case !s.mu.TryLock():
		s.whenFree(f)
		return false
	}
	return true
}

// checked records a verification, asked at wall, of the identity of
// generation gen.
func (s *session) checked(gen uint32, wall time.Time, wait bool) {
	if !s.lockFor(wait, func() { s.checked(gen, wall, true) }) {
		return
	}
	defer s.mu.Unlock()
	if s.auth.gen == gen {
		s.auth.checkedAt = wall
	}
}

// revoke lapses the session's authority after the verifier refused the
// token of the identity of generation gen (why is its reason, safe to
// log), unless the session has re-authenticated or lapsed meanwhile.
func (s *session) revoke(gen uint32, why string, wait bool) {
	if !s.lockFor(wait, func() { s.revoke(gen, why, true) }) {
		return
	}
	a, id, ok := s.revokeUnder(gen)
	if ok {
		s.lapsed(a, &id, why)
	}
}

// revokeUnder is revoke's part under s.mu, which it releases: false when the
// session re-authenticated, lapsed or ended meanwhile.
func (s *session) revokeUnder(gen uint32) (a standing, id Identity, ok bool) {
	defer s.mu.Unlock()
	now := s.g.cfg().Hooks.Now()
	if s.auth.ended || s.auth.standing != authLive || s.auth.gen != gen {
		return authNone, Identity{}, false
	}
	a = authRevoked
	if !s.auth.id.Expiry.IsZero() && !s.auth.id.Expiry.After(now) {
		a = authExpired // the verifier's refusal is the expiry
	}
	id = s.auth.id
	s.lapseLocked(a, now)
	return a, id, true
}
