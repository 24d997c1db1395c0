package wsauth

import (
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// A session's market-data entitlements (Config.Venues) are its identity's
// (authority.ent, under mu) and change three ways:
//   - a fresh credential replaces them (reauthenticate), and ends the
//     subscriptions the new set does not allow, as a lost scope does;
//   - a re-verification of the same token that returns fewer (its user
//     lost some: the identity server revokes the tokens issued before
//     such a change, and the Verifier hook answers a live socket with
//     the token's identity narrowed to what the user still holds) narrows
//     them to what both hold (narrow), and ends exactly the subscriptions
//     that lost their right: Error/Authority and a server Unsub to the
//     client, an Unsub to the backend; the others keep flowing;
//   - a re-verification never widens them: only a fresh credential does.

// narrow records a verification, asked at wall, of the identity of
// generation gen, which returned ent: the session keeps what it held and
// ent still holds, and the subscriptions that lost their right end. It
// never waits on the client or the backend: what the client is told is
// pushed, the backend's Unsubs are owed and written by a goroutine of the
// session's (unsubscribe), as a lapse's are.
func (s *session) narrow(gen uint32, ent entitle.Set, wall time.Time, wait bool) {
	if !s.lockFor(wait, func() { s.narrow(gen, ent, wall, true) }) {
		return
	}
	out, ended, held, user := s.narrowUnder(gen, ent, wall)
	for _, m := range out {
		if !s.push(m) {
			break // the client is not reading, and is being closed for it
		}
	}
	if ended >= 0 {
		s.g.log().Info("ws entitlements narrowed", zap.String("user", user), zap.Int("held", held),
			zap.Int("subscriptions_ended", ended), zap.String("remote", s.client.remote))
	}
}

// narrowUnder is narrow's part under s.mu, which it releases: ended is
// how many subscriptions ended, -1 when nothing changed.
func (s *session) narrowUnder(gen uint32, ent entitle.Set, wall time.Time) (out [][]byte, ended, held int, user string) {
	defer s.mu.Unlock()
	if s.auth.ended || s.auth.gen != gen || s.auth.standing != authLive {
		return nil, -1, 0, ""
	}
	s.auth.checkedAt = wall
	kept := s.auth.ent.Intersect(ent)
	if kept.Equal(s.auth.ent) {
		return nil, -1, 0, ""
	}
	if s.g.auditing() {
		var removed []string
		for _, p := range s.auth.ent.Missing(kept) {
			removed = append(removed, p.String())
		}
		s.g.record(audit.KindRevocation, s.who(&s.auth.id, audit.Strings(audit.AttrEntitlements, kept.Strings()...),
			audit.Strings("removed", removed...))...)
	}
	// The client reader's policy cache (allowed) answers by scopes, which
	// a narrowing leaves as they were: it stays, and is the reader's alone
	// (this runs on the supervisor). The entitlements are asked under mu
	// at each forward (forwardLocked).
	s.auth.ent = kept
	for _, k := range s.subs.keys() {
		msg := s.subs.msgs[k]
		if s.mayKeepLocked(k, msg) == "" {
			continue
		}
		out = append(out, s.endSubLocked(k, msg, endEntitlement, zenith.CodeAuthority)...)
		s.subs.owed = append(s.subs.owed, k)
		ended++
	}
	if ended > 0 && s.auth.bc != nil {
		// Added under s.mu before teardown sets ended, so before its Wait.
		s.life.wg.Add(1)
		contain.Go(s.g.log(), "ws.unsubscribe", s.unsubscribe, s.crashed)
	}
	if s.subs.identify {
		out = append(out, zenith.AppendAuthMessage(nil, "Identify", zenith.ActionPublish, nil, false,
			s.identifyWith(true, kept), s.g.cfg().Profile, s.g.cfg().Hooks.Now()))
	}
	return out, ended, kept.Len(), s.auth.id.Subject
}

// entitlements are the session's entitlements now. Any goroutine not
// holding s.mu.
func (s *session) entitlements() entitle.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.ent
}
