package wsauth

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// CodeUnknown answers an Auth message the gateway does not serve.
const CodeUnknown = "Operation.Unknown"

// session is one client socket and, once authenticated, its backend leg.
// Its state is in components, one per owner or lock, each a type that says
// what it holds and who may touch it.
//
// Goroutines and what they own:
//   - the client reader (run and everything it calls: readLoop, handle,
//     the auth handlers, authenticate, teardown) owns in, a clientReader
//     (clientread.go), of the close state stopping, stopCode and
//     clientCode, and of the trace the upgrade's span, method and authAt
//     (ServeHTTP's until the session runs); it reads the client socket and
//     writes the backend leg (under mu): its forwards are batched in the
//     leg's wsframe.Conn and written when the client socket has nothing
//     more to read, or before the reader waits on anything else
//     (flushBackend);
//   - the backend reader (backendLoop, backendFrames) owns back, a
//     backendReader (backendread.go); it reads the backend leg, frames its
//     messages into a batch of its own, and when the backend socket has
//     nothing more to read queues the batch (handOff) and writes the queue
//     to the client itself (drain);
//   - the client writer (writeLoop) writes the queue when another producer
//     (a reply, a push, a close) finds nobody writing it, and pings (the
//     pings it sends, and the client reader the pongs it reads, are noted
//     in pings, a clientPings with its own lock, ping.go); it owns
//     nothing;
//   - the gateway's supervisor (supervise.go), one for all sessions,
//     inspects each authenticated session every SuperviseInterval.
//
// One goroutine at a time writes the queue to the client (the flusher,
// drain): it alone writes data frames to the client socket. Control frames
// (pings, pongs, closes) go through gorilla's WriteControl, which any
// goroutine may call; the client wsframe.Conn writes them at once, after the
// batch so far.
//
// mu guards what the client reader shares with the supervisor, auth (an
// authority: the identity, its backend leg and what it allows now,
// live.go) and subs (the subscriptions, subs.go; each type says which of
// its fields mu guards), and every data write to the backend leg (one
// writer; the client's forwards and the gateway's own Unsubs and re-Subs
// must not interleave, and a forward's authority check and its write are
// one step). Nobody holding mu waits on the client: replies are queued
// after it is released, and what is queued under it uses push, which
// never waits.
//
// The client's send queue (out, a sendQueue) has its own lock (queue.go
// says what it guards, relay.go how the queue is written). Shared
// otherwise: the client's connection (client, a clientConn), wake, the
// session's lifetime (life, a lifetime), the close state (close, a
// closer, closing.go, which says which of it any goroutine may touch),
// and the socket's trace (tr, a sockTrace, trace.go, which says who
// touches what: the supervisor reads its tracer and link for a lapse's
// span). The configuration is the gateway's, g.cfg, read only.
type session struct {
	g      *Gateway
	sid    string     // the session's id in the audit (audit.go), set once by newSession; "" when not auditing
	client clientConn // the client's socket, set once by newSession
	tr     sockTrace  // the socket's trace (trace.go); its zero value when the upgrade is not traced
	life   lifetime   // the session's context and its end

	in clientReader // the client reader's (clientread.go)

	mu   sync.Mutex    // guards auth and subs, and the data writes to the backend leg
	auth authority     // the identity and its backend leg (live.go)
	subs subscriptions // the client's subscriptions (subs.go)

	out   sendQueue     // the client's send queue (queue.go), with its own lock
	outZ  compressRule  // which of the queue's messages the flusher compresses (compress.go)
	back  backendReader // the backend reader's (backendread.go)
	close closer        // the close state (closing.go)

	wake  chan struct{} // the client writer has messages to drain (capacity 1)
	pings clientPings   // the pings the client has not answered (ping.go), with its own lock
}

// clientConn is the client's socket, the counterpart of the authority's
// bc and bw. newSession sets it and nobody changes it after; how it is
// used is the goroutines' division in session: the client reader reads
// ws, the flusher alone writes data frames (through wire, compressed or
// not, or through ws when wire is nil), any goroutine may write control frames
// (ws.WriteControl) and move the read deadline to end the reads
// (closeClient, giveUp), and teardown closes it.
type clientConn struct {
	ws     *websocket.Conn
	wire   *wsframe.Conn // ws's connection, which frames the session's batches; nil when it is not one
	remote string        // the client's address (Hooks.ClientIP), for the logs and the verifier
}

// lifetime is how long the session lasts, for the goroutines it starts
// and the calls it makes. Set once by newSession; ctx, cancel and done
// are safe from any goroutine, and wg is counted as its comments say.
type lifetime struct {
	// ctx bounds a verification, a dial and the client reader's wait for
	// room; cancel ends it when the session begins to close
	// (closeClient), gives the client up (giveUp) or tears down.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed by teardown, once the client socket is closed or
	// lingering: the client writer stops, and so does a producer waiting
	// for room in the queue.
	done chan struct{}
	// wg counts the session's own goroutines (the writer, the backend
	// reader, an unsubscribe after a lapse): teardown waits for them
	// after closing done.
	wg sync.WaitGroup
}

// newSession is the session of a client socket, cc, upgraded from r,
// which admit admitted as adm.
func newSession(g *Gateway, cc *websocket.Conn, r *http.Request, adm *admission, tr sockTrace) *session {
	s := &session{
		g: g, sid: adm.sid, client: clientConn{ws: cc, remote: g.cfg().Hooks.ClientIP(r)}, tr: tr,
		in:   clientReader{state: StateUnauthenticated, place: heldPlace{src: adm.src}},
		out:  sendQueue{maxMsgs: g.cfg().Transport.SendQueue, maxBytes: g.cfg().Transport.SendQueueBytes},
		wake: make(chan struct{}, 1),
		life: lifetime{done: make(chan struct{})},
	}
	s.outZ.max = deflateWindow(r.Header)
	s.back.z.max = s.outZ.max
	if cw, ok := cc.NetConn().(*wsframe.Conn); ok {
		s.client.wire = cw
		cw.SetHooks(wsframe.Hooks{BeforeRead: s.extend, Idle: s.flushBackend, Stamp: true})
	}
	if adm.hasVersion {
		s.in.query = "version=" + adm.version // its form is checked: nothing to escape
	}
	s.in.insecure = g.cfg().Auth.RequireTLS && !g.cfg().Hooks.Secure(r)
	// The request's values, not its cancellation: the request ends at the
	// upgrade (ServeHTTP returns), the session later.
	s.life.ctx, s.life.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
	if tr.on() {
		s.tr.began = time.Now()
	}
	return s
}

// run is the session, on the client reader's goroutine: id is the
// identity verified on the upgrade (the verifier asked at at), or nil.
func (s *session) run(id *Identity, at time.Time) {
	defer s.teardown()
	defer contain.Recover(s.g.log(), "ws.client_reader", s.crashed)
	s.life.wg.Add(1)
	contain.Go(s.g.log(), "ws.writer", s.writeLoop, s.crashed)
	s.in.authDeadline = time.Now().Add(s.g.cfg().Auth.Timeout)
	s.g.cfg().Hooks.Metrics.Sessions(StateUnauthenticated, 1)
	if id != nil {
		s.g.addUnauth(s.in.place.src) // authenticate gives it back again
		if s.admitUser(id) {
			s.authenticate(*id, at)
		} else {
			s.tr.attempt(AuthHeader, AuthResultNo, "too many sessions of this user")
			s.closeAfterQueued(websocket.ClosePolicyViolation)
		}
	}
	s.readLoop()
}

// crashed ends the session after a panic in one of its goroutines was
// recovered: the client is sent 1011 at once, not behind the queue, and
// its reader then reads only the answer, CloseGrace at most, after which
// teardown closes the backend leg and releases the subscriptions. Safe
// from any goroutine; it takes no lock of the session's.
func (s *session) crashed() {
	s.closeClient(websocket.CloseInternalServerErr)
}

// handle answers or forwards one client message.
func (s *session) handle(msg []byte) {
	if s.in.state != StateAuthenticated {
		s.in.unauthMsgs++
		if s.in.unauthMsgs > s.g.cfg().Auth.MaxMessages {
			s.g.log().Info("ws session closed", zap.String("reason", "too many messages before authentication"), zap.String("remote", s.client.remote))
			s.closeAfterQueued(websocket.ClosePolicyViolation)
			return
		}
	}
	env, err := zenith.ScanReusing(msg, &s.in.topic)
	if err != nil {
		se, _ := errors.AsType[*zenith.ScanError](err)
		if errors.Is(err, zenith.ErrInvalidUTF8) {
			s.closeAfterQueued(websocket.CloseInvalidFramePayloadData)
			return
		}
		s.g.log().Debug("ws message refused", zap.String("reason", se.Reason), zap.Int64("offset", se.Offset), zap.String("remote", s.client.remote))
		if s.in.state == StateAuthenticated && !s.in.bucket.take(s.now(), &s.in.limits) {
			// A refused message costs its reply: it counts as any other.
			s.limited(&se.Echo, LimitRate)
			return
		}
		s.replyError(&se.Echo, zenith.CodeDeserialise)
		return
	}
	if env.Controller == "Auth" {
		// Unauthenticated, Auth.MaxMessages bounds them; afterwards a bucket
		// of their own, so a client cannot keep the verifier busy.
		if s.in.state == StateAuthenticated && !s.in.authBucket.take(s.now(), &authLimits) {
			s.limited(&env, LimitAuth)
			return
		}
		s.flushBackend() // what it forwarded goes before a verification
		s.handleAuth(&env)
		return
	}
	if s.in.state != StateAuthenticated {
		s.deny(&env, "unauthenticated")
		return
	}
	if cur := s.g.cfg(); cur.gen != s.in.conf {
		s.refresh(cur)
	}
	if !s.in.bucket.take(s.now(), &s.in.limits) {
		s.limited(&env, LimitRate)
		return
	}
	if env.Present&zenith.HasTransactionID != 0 && (env.TransactionID < s.g.cfg().tids.min || env.TransactionID > s.g.cfg().tids.max) {
		// The backend could not read it: nor would it act on it.
		s.replyError(&env, zenith.CodeDeserialise)
		return
	}
	if s.g.cfg().tids.reserved(env.TransactionIDText) {
		if ce := s.g.log().Check(zap.DebugLevel, "ws reserved transaction id refused"); ce != nil {
			ce.Write(s.messageFields(&env)...)
		}
		s.replyError(&env, CodeSession)
		return
	}
	ok, needed := s.allowed(&env)
	if !ok {
		s.deny(&env, "policy")
		return
	}
	order := needed == policy.ScopeOrderPad || needed == policy.ScopeAuthorise
	if order {
		s.g.log().Info("ws order message", s.messageFields(&env)...)
	}
	if s.forward(msg, &env) && order {
		s.auditMessage(audit.KindOrder, &env, audit.String("scope", needed))
	}
}

// refresh takes the limits and the policy from cur, a configuration
// Reconfigure put in force after the client reader last looked. Client
// reader only (forwardLocked calls it under mu).
func (s *session) refresh(cur *Config) {
	s.in.conf = cur.gen
	s.in.policy.valid = false
	if s.in.state == StateAuthenticated {
		s.in.limits = cur.Limits.limitsFor(&s.auth.id)
	}
}

// allowed is the policy's answer for env under the session's scopes
// (Policy.Allowed), kept for the next message with the same Controller
// and Topic until the identity changes (policyCache). Client reader only.
func (s *session) allowed(env *zenith.Envelope) (bool, string) {
	c := &s.in.policy
	if !c.valid || env.Controller != c.controller || env.Topic != c.topic {
		c.ok, c.needed = s.g.cfg().Policy.Allowed(s.auth.id.Scopes, env.Controller, env.Topic)
		c.controller, c.topic, c.valid = env.Controller, env.Topic, true
	}
	return c.ok, c.needed
}

// deny answers env with Error/Authority, counts and logs it.
func (s *session) deny(env *zenith.Envelope, why string) {
	s.g.cfg().Hooks.Metrics.Denied(controllerLabel(env.Controller))
	s.g.log().Info("ws message denied", append(s.messageFields(env), zap.String("reason", why))...)
	s.auditMessage(audit.KindDenial, env, s.deniedVenue(env, why, audit.String(audit.AttrReason, why))...)
	s.replyError(env, zenith.CodeAuthority)
}

// limited answers env with Error/Limited and counts it; kind is
// LimitSubscriptions or LimitRate.
func (s *session) limited(env *zenith.Envelope, kind string) {
	s.g.cfg().Hooks.Metrics.Limited(kind)
	if ce := s.g.log().Check(zap.DebugLevel, "ws message limited"); ce != nil {
		ce.Write(append(s.messageFields(env), zap.String("limit", kind))...)
	}
	if kind == LimitSubscriptions { // a rate limit's refusals are not recorded: a client could flood the audit
		s.auditMessage(audit.KindDenial, env, audit.String(audit.AttrReason, LimitSubscriptions))
	}
	s.replyError(env, CodeLimited)
}

// messageFields are an audit entry's fields: who, Controller, Topic (before
// its arguments, at most 128 bytes), TransactionID; never Data.
func (s *session) messageFields(env *zenith.Envelope) []zap.Field {
	topic := env.TopicBase()
	if len(topic) > 128 {
		topic = topic[:128]
	}
	controller := env.Controller
	if len(controller) > 128 {
		controller = controller[:128]
	}
	f := []zap.Field{zap.String("user", s.auth.id.Subject), zap.String("client_id", s.auth.id.ClientID),
		zap.String("controller", controller), zap.String("topic", topic)}
	if env.Present&zenith.HasTransactionID != 0 {
		f = append(f, zap.Int64("transaction_id", env.TransactionID))
	}
	return append(f, zap.String("remote", s.client.remote))
}

// reply queues one of the gateway's own messages for the client.
func (s *session) reply(msg []byte) {
	s.enqueue(outMsg{typ: websocket.TextMessage, data: msg})
}

// replyError queues the Error reply with code to the message env. One
// that echoes large fields is built in a pooled buffer (bigMsgBuf), given
// back once written: a client repeating near-megabyte messages that are
// refused must not make a megabyte of garbage each.
func (s *session) replyError(env *zenith.Envelope, code string) {
	n := zenith.ErrorReplyRoom(env, code)
	if n <= 64<<10 {
		s.reply(zenith.AppendError(nil, env, code))
		return
	}
	bp := bigMsgBuf(n)
	*bp = zenith.AppendError((*bp)[:0], env, code)
	s.enqueue(outMsg{typ: websocket.TextMessage, data: *bp, buf: bp})
}

func deadline(d time.Duration) time.Time { return time.Now().Add(d) }
