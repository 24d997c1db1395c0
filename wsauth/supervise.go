package wsauth

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
)

// maxRecheckTimeout bounds one re-verification of a session's token.
const maxRecheckTimeout = 2 * time.Second

// The gateway's supervisor is one goroutine per Gateway, started with its
// first session and ended by Shutdown: sessions have no timers or
// goroutines of their own for it, so an idle socket costs nothing more.
// Every SuperviseInterval it walks the live sessions and, for each
// authenticated one:
//
//   - ends the authority of an identity whose expiry (Config.Now) has
//     passed (lapseLocked);
//   - every RecheckInterval verifies its token again, outside the
//     session's lock: ErrRefused is a revocation, and ends authority as
//     expiry does; a fault changes nothing, and the walk's other
//     verifications wait for the next walk;
//   - when Config.RevocationsChanged signals, walks at once and verifies
//     again every session last checked before the signal (one skipped
//     because its lock was busy is due at the next walk);
//   - closes with 1008 a session whose authority lapsed more than
//     ExpiryGrace ago (a recoverable state: never a 4xxx code).
//
// It never waits on a client or a backend: what it sends the client is
// pushed without waiting (push, closeSoon), and a lapse's Unsubs are
// written to the backend by a goroutine of the session's (unsubscribe).
// It takes a session's lock only when free (TryLock): a session whose
// lock is held (its client reader, or that goroutine, writing to a slow
// backend) is looked at on the next walk; so is a verification's outcome,
// the session being due again.
func (g *Gateway) supervise(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(g.cfg.SuperviseInterval)
	defer tick.Stop()
	var live []*session
	var due []recheck
	var changed <-chan struct{} // nil without RevocationsChanged: never ready
	if g.cfg.RevocationsChanged != nil {
		changed = g.cfg.RevocationsChanged()
	}
	var changedAt time.Time // sessions checked before it are due
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-changed:
			changed = g.cfg.RevocationsChanged()
			changedAt = time.Now()
		}
		g.mu.Lock()
		for s := range g.sessions {
			live = append(live, s)
		}
		g.mu.Unlock()
		now, wall := g.cfg.Now(), time.Now()
		for _, s := range live {
			if r, ok := s.inspect(now, wall, changedAt); ok {
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

// inspect is the supervisor's look at one session at now (Config.Now) and
// wall (the system clock): it lapses an expired identity, closes a session
// past its grace, and reports a token due for verification (every
// RecheckInterval, and when it was last checked before changedAt, the
// last change of the verifier's revocations).
func (s *session) inspect(now, wall, changedAt time.Time) (recheck, bool) {
	if !s.mu.TryLock() {
		return recheck{}, false
	}
	var r recheck
	var due, closeIt bool
	var id Identity // for the log, copied only when needed
	lapsed := authNone
	switch {
	case s.ended || s.authority == authNone:
	case s.authority == authLive && !s.id.Expiry.IsZero() && !s.id.Expiry.After(now):
		lapsed, id = authExpired, s.id
		s.lapseLocked(lapsed, now)
	case s.authority == authLive:
		if s.id.Token != "" && (wall.Sub(s.checkedAt) >= s.cfg.RecheckInterval || s.checkedAt.Before(changedAt)) {
			r, due = recheck{s: s, token: s.id.Token, gen: s.gen}, true
		}
	case !s.graceClosed && now.Sub(s.lapsedAt) > s.cfg.ExpiryGrace:
		s.graceClosed, closeIt, id = true, true, s.id
	}
	s.mu.Unlock()
	if lapsed != authNone {
		s.lapsed(lapsed, &id, "")
	}
	if closeIt {
		s.g.log.Info("ws session closed", zap.String("reason", "authority lapsed past the grace period"),
			zap.String("user", id.Subject), zap.String("client_id", id.ClientID), zap.String("remote", s.remote))
		s.closeSoon(websocket.ClosePolicyViolation)
	}
	return r, due
}

// recheck verifies each token in due, one at a time, each within
// min(RecheckInterval, maxRecheckTimeout). A refusal lapses the session
// (revoked, or expired if its expiry has passed meanwhile) unless it has
// re-authenticated since; a fault stops the walk's verifications.
func (g *Gateway) recheck(ctx context.Context, due []recheck) {
	timeout := min(g.cfg.RecheckInterval, maxRecheckTimeout)
	for _, r := range due {
		vctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := g.cfg.Verifier.VerifyAccessToken(vctx, r.token)
		cancel()
		switch {
		case err == nil:
			r.s.checked(r.gen, time.Now())
		case errors.Is(err, ErrRefused):
			r.s.revoke(r.gen, refusalReason(err))
		case ctx.Err() != nil:
			return // Shutdown
		default:
			g.log.Warn("ws token recheck failed", zap.Error(err))
			return
		}
	}
}

// checked records a verification at wall of the identity of generation
// gen; not when the session's lock is busy (the token is then due again
// at the next walk).
func (s *session) checked(gen uint32, wall time.Time) {
	if !s.mu.TryLock() {
		return
	}
	if s.gen == gen {
		s.checkedAt = wall
	}
	s.mu.Unlock()
}

// revoke lapses the session's authority after the verifier refused the
// token of the identity of generation gen (why is its reason, safe to
// log), unless the session has re-authenticated or lapsed meanwhile. When
// the session's lock is busy it does nothing: the token, not checked
// since, is verified again at the next walk.
func (s *session) revoke(gen uint32, why string) {
	now := s.cfg.Now()
	if !s.mu.TryLock() {
		return
	}
	if s.ended || s.authority != authLive || s.gen != gen {
		s.mu.Unlock()
		return
	}
	a := authRevoked
	if !s.id.Expiry.IsZero() && !s.id.Expiry.After(now) {
		a = authExpired // the verifier's refusal is the expiry
	}
	id := s.id
	s.lapseLocked(a, now)
	s.mu.Unlock()
	s.lapsed(a, &id, why)
}
