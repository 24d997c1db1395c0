package wsauth

import (
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// authority is what an authenticated session's identity allows now.
type authority uint8

const (
	authNone    authority = iota // not authenticated
	authLive                     // the identity holds: messages are forwarded
	authExpired                  // its expiry passed
	authRevoked                  // the verifier refuses its token now
)

// state is the sessions gauge's state of a session with authority a.
func (a authority) state() State {
	switch a {
	case authNone:
		return StateUnauthenticated
	case authLive:
		return StateAuthenticated
	}
	return StateExpired
}

func (a authority) reason() string {
	if a == authRevoked {
		return LapseRevoked
	}
	return LapseExpired
}

// setAuthorityLocked moves the session to a, keeping the sessions gauge
// exact. s.mu held.
func (s *session) setAuthorityLocked(a authority) {
	if from, to := s.authority.state(), a.state(); from != to {
		s.cfg.Metrics.Sessions(from, -1)
		s.cfg.Metrics.Sessions(to, 1)
	}
	s.authority = a
}

// live reports whether the session is authenticated and its authority
// holds. Client reader.
func (s *session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authority == authLive
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
func (s *session) lapseLocked(a authority, now time.Time) {
	s.setAuthorityLocked(a)
	s.lapsedAt = now
	if s.bc != nil {
		s.owed = append(s.owed, s.subKeysLocked()...)
		// Added under s.mu before teardown sets ended, so before its
		// Wait; the writer is still counted.
		s.wg.Add(1)
		contain.Go(s.g.log, "ws.unsubscribe", s.unsubscribe, s.crashed)
	}
	if a == authRevoked {
		s.push(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionPublish, nil, false, &zenith.Identify{}, s.cfg.Profile, now))
	}
}

// unsubscribe writes the Unsubs owed since a lapse (lapseLocked) and the
// leg's batch with them (the client reader's forwards before the lapse),
// each write within WriteTimeout; it closes the session (1011) when a
// write fails. It waits on the backend as the client reader would, not
// as the supervisor may: the supervisor skips the session meanwhile.
func (s *session) unsubscribe() {
	defer s.wg.Done()
	bw, user, err := func() (*wsframe.Conn, string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.bw, s.id.Subject, s.writeOwedLocked()
	}()
	if err == nil && bw != nil && !s.close.ending.Load() {
		err = bw.Flush()
	}
	if err != nil && !s.close.ending.Load() {
		s.g.log.Warn("ws backend write failed", zap.String("user", user), zap.Error(err))
		s.closeSoon(websocket.CloseInternalServerErr)
	}
}

// writeOwedLocked writes the backend the Unsubs owed since a lapse, before
// anything else the session writes it after the lapse (a re-Sub). s.mu
// held.
func (s *session) writeOwedLocked() error {
	keys := s.owed
	s.owed = nil
	if s.ended {
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
func (s *session) lapsed(a authority, id *Identity, refusal string) {
	s.cfg.Metrics.Lapsed(a.reason())
	f := []zap.Field{zap.String("reason", a.reason()), zap.String("user", id.Subject),
		zap.String("client_id", id.ClientID), zap.String("remote", s.remote)}
	if refusal != "" {
		f = append(f, zap.String("refusal", refusal))
	}
	s.g.log.Info("ws authority lapsed", f...)
	s.tr.lapsed(a.reason(), refusal, id)
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
		wasLive = s.authority == authLive
		s.id = id
		s.polValid = false
		s.gen++
		gen = s.gen
		s.checkedAt = at
		s.setAuthorityLocked(authLive)
		s.limits = s.cfg.limitsFor(&s.id)
		if !wasLive {
			err = s.writeOwedLocked() // the lapse's Unsubs go before the re-Subs
		}
		for _, k := range s.subKeysLocked() {
			if ok, _ := s.cfg.Policy.Allowed(id.Scopes, k.controller, k.topic); ok {
				if !wasLive {
					resend = append(resend, k)
				}
				continue
			}
			sub, _ := zenith.Scan(s.subs[k]) // scanned once already: it reads
			out = append(out, zenith.AppendError(nil, &sub, zenith.CodeAuthority),
				zenith.AppendUnsub(nil, k.controller, k.topic, sub.TransactionIDText, true))
			if wasLive && err == nil {
				err = s.unsubBackendLocked(k)
			}
			s.untrackLocked(k)
		}
		push = s.identifySub
	}()

	s.cfg.Metrics.Reauthenticated()
	s.g.log.Info("ws reauthentication", zap.String("method", string(method)), zap.String("user", id.Subject),
		zap.String("client_id", id.ClientID), zap.Bool("was_lapsed", !wasLive), zap.Int("resubscribed", len(resend)),
		zap.Int("subscriptions_ended", len(out)/2), zap.String("remote", s.remote))
	s.tr.reauthenticated(s.authAt, method, AuthResultOK, "", &id, !wasLive, len(resend), len(out)/2)
	s.replyIdentify(topic, env, true)
	for _, m := range out {
		s.reply(m)
	}
	if push {
		s.reply(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionPublish, nil, false, s.identify(true), s.cfg.Profile, s.cfg.Now()))
	}
	if err == nil && len(resend) > 0 {
		err = s.resubscribe(gen, resend)
	}
	if err != nil {
		s.g.log.Warn("ws backend write failed", zap.String("user", id.Subject), zap.Error(err))
		s.closeAfterQueued(websocket.CloseInternalServerErr)
	}
}

// resubscribe re-sends the client's Sub of each of keys to the backend,
// unless the identity of generation gen has lost its authority meanwhile
// (its lapse then unsubscribed them all again). Client reader only.
func (s *session) resubscribe(gen uint32, keys []subKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.gen != gen || s.authority != authLive {
		return nil
	}
	for _, k := range keys {
		if msg, ok := s.subs[k]; ok {
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
	if s.insecure {
		s.cfg.withhold(id)
	}
}

// identifySubscription answers Auth/Identify Sub (the reply carries the
// current identity, Action Sub, Confirm true, the request's
// TransactionID) and Unsub (no reply); while subscribed, the client is
// pushed its identity after each re-authentication. Client reader only.
func (s *session) identifySubscription(env *zenith.Envelope) {
	if s.state != StateAuthenticated {
		s.deny(env, "unauthenticated")
		return
	}
	s.mu.Lock()
	s.identifySub = env.Action == zenith.ActionSub
	live := s.authority == authLive
	s.mu.Unlock()
	if env.Action == zenith.ActionSub {
		s.reply(zenith.AppendAuthMessage(nil, "Identify", zenith.ActionSub, env.TransactionIDText, true, s.identify(live), s.cfg.Profile, s.cfg.Now()))
	}
}

// identify is what an Identify message tells of the session's identity,
// or the failure result. Client reader only.
func (s *session) identify(success bool) *zenith.Identify {
	id := &zenith.Identify{Success: success}
	if success {
		id.DisplayName, id.UserID, id.Expiry, id.Scopes = s.id.DisplayName, s.id.Subject, s.id.Expiry, s.id.Scopes
		if s.cfg.returnsToken(s.id.ClientID) {
			id.AccessToken = s.id.Token
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
		contain.Go(s.g.log, "ws.close", func() { s.closeClient(code) }, nil)
	}
}
