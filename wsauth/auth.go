package wsauth

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// handleAuth answers an Auth message; none is ever forwarded. Auth
// messages are answered whatever the session's authority (a lapsed
// session needs them to recover; QueryIdentify then answers Reject) and
// are not rate-limited by Limits. Identify Sub and Unsub are served
// (identifySubscription); any other Action gets Operation.Unknown.
// Client reader only.
func (s *session) handleAuth(env *zenith.Envelope) {
	if s.tr.on() {
		s.tr.authAt = time.Now()
	}
	if env.Action != zenith.ActionPublish {
		if (env.Action == zenith.ActionSub || env.Action == zenith.ActionUnsub) && env.TopicBase() == "Identify" {
			s.identifySubscription(env)
			return
		}
		s.replyError(env, CodeUnknown)
		return
	}
	if s.in.state != StateAuthenticated && s.g.cfg().Hooks.Audit.Refusing() && env.TopicBase() != "QueryIdentify" {
		// No new session while the audit cannot write: the client is to
		// try again later.
		s.closeAfterQueued(websocket.CloseTryAgainLater)
		return
	}
	switch env.TopicBase() {
	case "AuthToken":
		s.authToken(env)
	case "QueryIdentify":
		s.replyIdentify("QueryIdentify", env, s.in.state == StateAuthenticated && s.live())
	case "AuthOwner":
		s.authOwner(env)
	case "AuthCode":
		s.authCode(env)
	default:
		s.replyError(env, CodeUnknown)
	}
}

// otherReplyTopic is the reply Topic of AuthOwner and AuthCode: Identify,
// or the request's own topic in the motif profile.
func (s *session) otherReplyTopic(env *zenith.Envelope) string {
	if s.g.cfg().Profile.Motif {
		return env.TopicBase()
	}
	return "Identify"
}

func (s *session) authToken(env *zenith.Envelope) {
	topic := s.g.cfg().Profile.AuthTokenReplyTopic()
	req, err := zenith.ParseAuthToken(env.Data, s.g.cfg().Auth.MaxTokenBytes)
	switch {
	case err != nil:
		reason := "malformed AuthToken"
		if errors.Is(err, zenith.ErrTokenTooLarge) {
			reason = "token too large"
		}
		s.refuse(AuthTokenMsg, AuthResultNo, reason, topic, env)
		return
	case req.Provider != "Bearer":
		s.refuse(AuthTokenMsg, AuthResultNo, "provider not Bearer", topic, env)
		return
	}
	ctx, cancel := s.checkContext()
	defer cancel()
	at := time.Now()
	id, err := s.g.cfg().Hooks.Verifier.VerifyAccessToken(ctx, req.AccessToken)
	if err == nil {
		id.Token = req.AccessToken
	}
	s.accept(AuthTokenMsg, id, at, err, topic, env)
}

func (s *session) authOwner(env *zenith.Envelope) {
	topic := s.otherReplyTopic(env)
	if s.g.cfg().Hooks.Passwords == nil {
		s.refuse(AuthOwnerMsg, AuthResultNo, "no password checker", topic, env)
		return
	}
	req, ok := zenith.ParseAuthOwner(env.Data)
	if !ok {
		s.refuse(AuthOwnerMsg, AuthResultNo, "malformed AuthOwner", topic, env)
		return
	}
	cred := OwnerCredentials{ClientID: req.ClientID, ClientSecret: req.ClientSecret, Username: req.Username,
		Password: req.Password, RemoteAddr: s.client.remote}
	ctx, cancel := s.checkContext()
	defer cancel()
	at := time.Now()
	id, err := s.g.cfg().Hooks.Passwords.CheckOwner(ctx, cred)
	s.accept(AuthOwnerMsg, id, at, err, topic, env)
}

// checkContext is the context of a credential check: the session's, and
// while unauthenticated no longer than the auth deadline, so a hung
// verifier cannot keep an unauthenticated socket open.
func (s *session) checkContext() (context.Context, context.CancelFunc) {
	if s.in.state == StateAuthenticated {
		return context.WithCancel(s.life.ctx)
	}
	return context.WithDeadline(s.life.ctx, s.in.authDeadline)
}

// accept ends an authentication attempt that reached the verifier (err
// from it; at, when it was asked). A refusal leaves the session as it
// was, lapsed or not. Once authenticated, a new credential must name the
// same subject; it then replaces the identity (scopes, expiry) the policy
// reads (reauthenticate).
func (s *session) accept(method AuthMethod, id Identity, at time.Time, err error, topic string, env *zenith.Envelope) {
	switch {
	case errors.Is(err, ErrRefused):
		s.refuse(method, AuthResultNo, refusalReason(err), topic, env)
		return
	case err != nil && s.life.ctx.Err() != nil:
		return // the session is closing: no reply, no fault
	case err != nil:
		s.g.log().Error("ws credential check failed", zap.String("method", string(method)), zap.Error(err))
		s.refuse(method, AuthResultErr, "verifier fault", topic, env)
		return
	case !id.Expiry.IsZero() && !id.Expiry.After(s.g.cfg().Hooks.Now()):
		s.refuse(method, AuthResultNo, "expired", topic, env)
		return
	case s.in.state == StateAuthenticated && id.Subject != s.auth.id.Subject:
		s.refuse(method, AuthResultNo, "another subject than the session's", topic, env)
		return
	case s.in.state != StateAuthenticated && !s.admitUser(&id):
		s.refuse(method, AuthResultNo, "too many sessions of this user", topic, env)
		return
	}
	s.g.cfg().Hooks.Metrics.Auth(method, AuthResultOK)
	s.g.log().Info("ws authentication", zap.String("method", string(method)), zap.String("result", AuthResultOK),
		zap.String("user", id.Subject), zap.String("client_id", id.ClientID), zap.String("remote", s.client.remote))
	s.tr.attempt(method, AuthResultOK, "")
	if s.in.state != StateAuthenticated {
		s.auditAuth(audit.KindAuthentication, method, AuthResultOK, "", &id)
	}
	if s.in.state == StateAuthenticated {
		s.reauthenticate(method, id, at, topic, env)
		return
	}
	if !s.authenticate(id, at) {
		return // closed: the backend is down
	}
	s.replyIdentify(topic, env, true)
}

// refuse answers Reject (Rejected in the motif profile), counts and logs
// it. reason is the gateway's or the verifier's fixed wording.
func (s *session) refuse(method AuthMethod, result, reason, topic string, env *zenith.Envelope) {
	s.g.cfg().Hooks.Metrics.Auth(method, result)
	s.g.log().Info("ws authentication", zap.String("method", string(method)), zap.String("result", result),
		zap.String("reason", reason), zap.String("remote", s.client.remote), zap.String("session_user", s.auth.id.Subject))
	if s.in.state == StateAuthenticated {
		s.tr.reauthenticated(s.tr.authAt, method, result, reason, &s.auth.id, false, 0, 0)
		s.auditAuth(audit.KindReauthentication, method, result, reason, &s.auth.id)
	} else {
		s.tr.attempt(method, result, reason)
		s.auditAuth(audit.KindAuthentication, method, result, reason, nil)
	}
	s.replyIdentify(topic, env, false)
}

// replyIdentify sends the Identify data of the session's identity, or the
// failure result.
func (s *session) replyIdentify(topic string, env *zenith.Envelope, success bool) {
	s.reply(zenith.AppendAuthReply(nil, topic, env.TransactionIDText, s.identify(success), s.g.cfg().Profile, s.g.cfg().Hooks.Now()))
}

// admitUser counts the session as one of its user's (Limits.Sessions of
// id's limits), before its first authentication; false, counted and
// logged, when the user has as many already. Teardown uncounts it.
func (s *session) admitUser(id *Identity) bool {
	if !s.g.enterUser(id.Subject, s.g.cfg().Limits.limitsFor(id).Sessions) {
		s.g.cfg().Hooks.Metrics.Limited(LimitSessions)
		s.g.log().Info("ws session refused", zap.String("reason", "too many sessions of this user"),
			zap.String("user", id.Subject), zap.String("remote", s.client.remote))
		if s.g.auditing() {
			s.g.record(audit.KindDenial, s.who(id, audit.String(audit.AttrReason, LimitSessions))...)
		}
		return false
	}
	s.in.place.slot, s.in.place.counted = id.Subject, true
	return true
}

// authenticate makes the session authenticated as id, verified at at
// (when the verifier was asked: a revocation signalled after that makes
// the token due for a recheck, even one signalled while the backend leg
// was being opened), and opens the backend leg; false when the leg could
// not be opened (the client is then being closed with 1011 or 1013).
func (s *session) authenticate(id Identity, at time.Time) bool {
	s.adopt(&id)
	s.mu.Lock()
	s.auth.id, s.auth.ent = id, id.Entitlements
	s.mu.Unlock()
	s.in.policy.valid = false
	bc, leg, code := s.dialBackend()
	if bc == nil {
		s.closeAfterQueued(code)
		return false
	}
	cur := s.g.cfg()
	s.in.conf, s.in.limits = cur.gen, cur.Limits.limitsFor(&id)
	subject := id.Subject
	s.auth.user.Store(&subject)
	s.in.state = StateAuthenticated
	s.g.giveUnauth(s.in.place.src)
	s.tr.authenticated(&id)
	bw, _ := bc.NetConn().(*wsframe.Conn)
	s.mu.Lock()
	s.auth.bc, s.auth.bw = bc, bw
	s.auth.gen++
	s.auth.checkedAt = at
	s.subs.fitted = cur.gen // none yet: nothing to fit
	s.setAuthorityLocked(authLive)
	s.mu.Unlock()
	s.back.conn = bc.NetConn()
	s.back.deflate = s.client.wire != nil && s.client.wire.Deflate()
	s.back.leg = leg
	if bw != nil {
		bw.SetHooks(wsframe.Hooks{BeforeRead: s.extendBackend, Idle: s.backendIdle, Eager: true})
	}
	s.life.wg.Add(1)
	if bw != nil && bw.RawReads() {
		contain.Go(s.g.log(), "ws.backend_reader", func() { s.backendFrames(bc, bw) }, s.crashed)
	} else {
		contain.Go(s.g.log(), "ws.backend_reader", func() { s.backendLoop(bc) }, s.crashed)
	}
	return true
}
