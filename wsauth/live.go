package wsauth

import (
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// authority is a session's identity, its backend leg, and what the
// identity allows now: what the client reader shares with the supervisor,
// under the session's mu but for user and looking. The client reader
// writes id, bc and bw only under mu and reads them, its own, without it;
// the supervisor reads them under mu.
type authority struct {
	id          Identity        // the client reader reads it without mu
	ent         entitle.Set     // the entitlements held now: id's, narrowed by re-verifications; under mu always
	bc          *websocket.Conn // the backend leg, nil until authenticated; likewise
	bw          *wsframe.Conn   // bc's connection; likewise
	standing    standing        // what the identity allows now
	gen         uint32          // one more at each (re-)authentication
	lapsedAt    time.Time       // when authority lapsed (Hooks.Now)
	checkedAt   time.Time       // the token's last verification (system clock)
	ended       bool            // teardown has begun: nothing more is written or pushed
	graceClosed bool            // closed for ExpiryGrace

	// user is the subject, for the logs, set once, before the backend
	// reader starts; without mu. It is atomic because the client writer
	// may read it (countSlow, for a ping left unanswered) while the client
	// reader sets it.
	user    atomic.Pointer[string]
	looking atomic.Bool // a goroutine waits for mu to do the supervisor's work (whenFree)
}

// subject is the authenticated subject, for the logs; "" before
// authentication. Any goroutine.
func (a *authority) subject() string {
	if u := a.user.Load(); u != nil {
		return *u
	}
	return ""
}

// standing is what an authenticated session's identity allows now.
type standing uint8

const (
	authNone    standing = iota // not authenticated
	authLive                    // the identity holds: messages are forwarded
	authExpired                 // its expiry passed
	authRevoked                 // the verifier refuses its token now
)

// state is the sessions gauge's state of a session whose identity's
// standing is a.
func (a standing) state() State {
	switch a {
	case authNone:
		return StateUnauthenticated
	case authLive:
		return StateAuthenticated
	}
	return StateExpired
}

func (a standing) reason() string {
	if a == authRevoked {
		return LapseRevoked
	}
	return LapseExpired
}

// setAuthorityLocked moves the session to a, keeping the sessions gauge
// exact. s.mu held.
func (s *session) setAuthorityLocked(a standing) {
	if from, to := s.auth.standing.state(), a.state(); from != to {
		s.g.cfg().Hooks.Metrics.Sessions(from, -1)
		s.g.cfg().Hooks.Metrics.Sessions(to, 1)
	}
	s.auth.standing = a
}

// live reports whether the session is authenticated and its authority
// holds. Client reader.
func (s *session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.standing == authLive
}

// lapseLocked ends the session's authority (a is authExpired or
// authRevoked) at now: from then on the client's messages other than
// Auth ones are refused (Error/Authority), not forwarded. The backend is
// owed an Unsub for each subscription (owed), so the client's feed stops
// cleanly; the subscriptions are remembered for a fresh credential. The
// Unsubs are written by a goroutine of the session's own (unsubscribe),
// not the caller's: the supervisor, which must not wait on a backend. On
// revocation the client is told with an Identify push whose Result is
// Reject (Rejected in the motif profile). s.mu held, the authority live;
// the caller calls lapsed once it has released s.mu.
func (s *session) lapseLocked(a standing, now time.Time) {
	s.setAuthorityLocked(a)
	s.auth.lapsedAt = now
	if s.auth.bc != nil {
		keys := s.subs.keys()
		for _, k := range keys {
			s.auditSubLocked(audit.KindSubscriptionEnd, k, s.subs.msgs[k], endLapse)
		}
		s.subs.owed = append(s.subs.owed, keys...)
		// Added under s.mu before teardown sets ended, so before its
		// Wait; the writer is still counted.
		s.life.wg.Add(1)
		contain.Go(s.g.log(), "ws.unsubscribe", s.unsubscribe, s.crashed)
	}
	if a == authRevoked {
		s.push(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionPublish, nil, false, &zenith.Identify{}, s.g.cfg().Profile, now))
	}
}

// unsubscribe writes the Unsubs owed since a lapse (lapseLocked) and the
// leg's batch with them (the client reader's forwards before the lapse),
// each write within WriteTimeout; it closes the session (1011) when a
// write fails. It waits on the backend as the client reader would, not
// as the supervisor may: the supervisor skips the session meanwhile.
func (s *session) unsubscribe() {
	defer s.life.wg.Done()
	bw, user, err := func() (*wsframe.Conn, string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.auth.bw, s.auth.id.Subject, s.writeOwedLocked()
	}()
	if err == nil && bw != nil && !s.close.ending.Load() {
		err = bw.Flush()
	}
	if err != nil && !s.close.ending.Load() {
		s.g.log().Warn("ws backend write failed", zap.String("user", user), zap.Error(err))
		s.closeSoon(websocket.CloseInternalServerErr)
	}
}

// writeOwedLocked writes the backend the Unsubs owed since a lapse, before
// anything else the session writes it after the lapse (a re-Sub). s.mu
// held.
func (s *session) writeOwedLocked() error {
	keys := s.subs.owed
	s.subs.owed = nil
	if s.auth.ended {
		return nil
	}
	for _, k := range keys {
		if err := s.unsubBackendLocked(k); err != nil {
			return err
		}
	}
	return nil
}

// lapsed counts and logs (the audit entry) a lapse of id's authority,
// with the verifier's refusal reason for a revocation.
func (s *session) lapsed(a standing, id *Identity, refusal string) {
	s.g.cfg().Hooks.Metrics.Lapsed(a.reason())
	f := []zap.Field{zap.String("reason", a.reason()), zap.String("user", id.Subject),
		zap.String("client_id", id.ClientID), zap.String("remote", s.client.remote)}
	if refusal != "" {
		f = append(f, zap.String("refusal", refusal))
	}
	s.g.log().Info("ws authority lapsed", f...)
	s.tr.lapsed(a.reason(), refusal, id)
	if s.g.auditing() {
		attrs := []audit.Attr{audit.String(audit.AttrReason, a.reason())}
		if refusal != "" {
			attrs = append(attrs, audit.String("refusal", refusal))
		}
		s.g.record(audit.KindLapse, s.who(id, attrs...)...)
	}
}

// reauthenticate replaces the identity of an authenticated session with
// id, a fresh credential's for the same subject (accept checked it). If
// authority had lapsed it holds again, and each remembered subscription
// the policy still allows under id's scopes is re-sent to the backend as
// the client's own Sub, so the backend sends a fresh snapshot. Each one it
// no longer allows gets, to the client, Error/Authority then a server
// Unsub (Confirm true) and is forgotten; the backend gets an Unsub unless
// it had one at the lapse. The client gets the reply first, then those
// Errors and Unsubs, then, if it subscribed to Identify, the new
// identity; the Subs are re-sent after them, so the snapshots follow the
// reply. at is when the verifier was asked: the token's check time.
// Client reader only.
func (s *session) reauthenticate(method AuthMethod, id Identity, at time.Time, topic string, env *zenith.Envelope) {
	s.adopt(&id)
	var out [][]byte // for the client, after the reply
	var (
		wasLive, push bool
		gen           uint32
		err           error
		resend        []subKey
	)
	func() { // under s.mu, released in a deferred call so that a panic leaves it free
		s.mu.Lock()
		defer s.mu.Unlock()
		wasLive = s.auth.standing == authLive
		s.auth.id, s.auth.ent = id, id.Entitlements
		s.in.policy.valid = false
		s.auth.gen++
		gen = s.auth.gen
		s.auth.checkedAt = at
		s.setAuthorityLocked(authLive)
		s.in.limits = s.g.cfg().Limits.limitsFor(&s.auth.id)
		if !wasLive {
			err = s.writeOwedLocked() // the lapse's Unsubs go before the re-Subs
		}
		for _, k := range s.subs.keys() {
			msg := s.subs.msgs[k]
			why := s.mayKeepLocked(k, msg)
			if why == "" {
				if !wasLive {
					resend = append(resend, k)
					s.auditSubLocked(audit.KindSubscriptionStart, k, s.subs.msgs[k], "")
				}
				continue
			}
			if !wasLive {
				why = "" // its end was recorded at the lapse
			}
			out = append(out, s.endSubLocked(k, msg, why, zenith.CodeAuthority)...)
			if wasLive && err == nil {
				err = s.unsubBackendLocked(k)
			}
		}
		push = s.subs.identify
	}()

	s.g.cfg().Hooks.Metrics.Reauthenticated()
	s.g.log().Info("ws reauthentication", zap.String("method", string(method)), zap.String("user", id.Subject),
		zap.String("client_id", id.ClientID), zap.Bool("was_lapsed", !wasLive), zap.Int("resubscribed", len(resend)),
		zap.Int("subscriptions_ended", len(out)/2), zap.String("remote", s.client.remote))
	s.tr.reauthenticated(s.tr.authAt, method, AuthResultOK, "", &id, !wasLive, len(resend), len(out)/2)
	s.auditAuth(audit.KindReauthentication, method, AuthResultOK, "", &id, audit.Bool("was_lapsed", !wasLive),
		audit.Int("resubscribed", int64(len(resend))), audit.Int("ended", int64(len(out)/2)))
	s.replyIdentify(topic, env, true)
	for _, m := range out {
		s.reply(m)
	}
	if push {
		s.reply(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionPublish, nil, false, s.identify(true), s.g.cfg().Profile, s.g.cfg().Hooks.Now()))
	}
	if err == nil && len(resend) > 0 {
		err = s.resubscribe(gen, resend)
	}
	if err != nil {
		s.g.log().Warn("ws backend write failed", zap.String("user", id.Subject), zap.Error(err))
		s.closeAfterQueued(websocket.CloseInternalServerErr)
	}
}

// mayKeepLocked says whether the session's identity and entitlements
// still allow the subscription k, whose Sub is msg: "" when they do, else
// what it lacks, endScope (the scope policy) or endEntitlement (the venue
// table, when there is one; only then is the Sub read again, for its
// Data). s.mu held.
func (s *session) mayKeepLocked(k subKey, msg []byte) string {
	if ok, _ := s.g.cfg().Policy.Allowed(s.auth.id.Scopes, k.controller, k.topic); !ok {
		return endScope
	}
	if v := s.g.cfg().Venues; v != nil {
		sub, _ := zenith.Scan(msg) // scanned once already: it reads
		if ok, _ := v.Check(s.auth.ent, k.controller, k.topic, sub.Data); !ok {
			return endEntitlement
		}
	}
	return ""
}

// endSubLocked forgets the subscription k, whose Sub is msg, because the
// session lost its right to it, and returns what the client is told:
// Error with code (Authority, or Limited over a lowered limit) and the
// Sub's TransactionID, then a server Unsub (Confirm true). The caller unsubscribes the backend. why is the
// subscription_end's reason; "" records none (its end was recorded when
// authority lapsed). s.mu held.
func (s *session) endSubLocked(k subKey, msg []byte, why, code string) [][]byte {
	sub, _ := zenith.Scan(msg) // scanned once already: it reads
	s.untrackLocked(k, why)
	return [][]byte{zenith.AppendError(nil, &sub, code),
		zenith.AppendUnsub(nil, k.controller, k.topic, sub.TransactionIDText, true)}
}

// resubscribe re-sends the client's Sub of each of keys to the backend,
// unless the identity of generation gen has lost its authority meanwhile
// (its lapse then unsubscribed them all again). Client reader only.
func (s *session) resubscribe(gen uint32, keys []subKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.ended || s.auth.gen != gen || s.auth.standing != authLive {
		return nil
	}
	for _, k := range keys {
		if msg, ok := s.subs.msgs[k]; ok {
			if err := s.writeBackendLocked(msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// adopt prepares an identity the session is about to take: on a
// connection require_tls finds not secure, WithheldScopes are removed.
// Client reader only.
func (s *session) adopt(id *Identity) {
	if s.in.insecure {
		s.g.cfg().Auth.withhold(id)
	}
}

// identifySubscription answers Auth/Identify Sub (the reply carries the
// current identity, Action Sub, Confirm true, the request's
// TransactionID) and Unsub (no reply); while subscribed, the client is
// pushed its identity after each re-authentication. Client reader only.
func (s *session) identifySubscription(env *zenith.Envelope) {
	if s.in.state != StateAuthenticated {
		s.deny(env, "unauthenticated")
		return
	}
	s.mu.Lock()
	s.subs.identify = env.Action == zenith.ActionSub
	live := s.auth.standing == authLive
	s.mu.Unlock()
	if env.Action == zenith.ActionSub {
		s.reply(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionSub, env.TransactionIDText, true, s.identify(live), s.g.cfg().Profile, s.g.cfg().Hooks.Now()))
	}
}

// identify is what an Identify message tells of the session's identity,
// or the failure result. Client reader only, s.mu not held.
func (s *session) identify(success bool) *zenith.Identify {
	var ent entitle.Set
	if success && s.g.cfg().Venues != nil {
		ent = s.entitlements()
	}
	return s.identifyWith(success, ent)
}

// identifyWith is identify with the entitlements ent, listed when the
// gateway checks them (Config.Venues). The client reader, or a holder of
// s.mu.
func (s *session) identifyWith(success bool, ent entitle.Set) *zenith.Identify {
	id := &zenith.Identify{Success: success}
	if success {
		id.DisplayName, id.UserID, id.Expiry, id.Scopes = s.auth.id.DisplayName, s.auth.id.Subject, s.auth.id.Expiry, s.auth.id.Scopes
		if s.g.cfg().Auth.returnsToken(s.auth.id.ClientID) {
			id.AccessToken = s.auth.id.Token
		}
		if s.g.cfg().Venues != nil {
			id.Entitlements = ent.Strings() // never nil: [] lists none
		}
	}
	return id
}

// push queues one of the gateway's own messages for the client without
// waiting: when the queue is full the message is dropped (the client is
// then not reading, and being closed for it). Safe from any goroutine.
func (s *session) push(msg []byte) bool {
	return s.tryPut(outMsg{typ: websocket.TextMessage, data: msg})
}

// closeSoon closes the client with code once what is queued is written,
// without waiting: with the queue full, the close starts at once on a
// goroutine of its own (closeClient may wait WriteTimeout on a writer
// stuck on a slow client). Safe from any goroutine.
func (s *session) closeSoon(code int) {
	if !s.tryPut(outMsg{close: code}) {
		contain.Go(s.g.log(), "ws.close", func() { s.closeClient(code) }, nil)
	}
}
