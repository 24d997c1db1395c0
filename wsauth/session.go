package wsauth

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
	"github.com/gatehouse/gatehouse/wsauth/policy"
	"github.com/gatehouse/gatehouse/wsauth/zenith"
)

// CodeUnknown answers an Auth message the gateway does not serve.
const CodeUnknown = "Operation.Unknown"

// session is one client socket and, once authenticated, its backend leg.
//
// Goroutines and what they own:
//   - the client reader (the goroutine ServeHTTP starts, or ServeHTTP's
//     own on an extended CONNECT: run and everything it calls: readLoop,
//     handle, the auth handlers, openBackend, teardown) owns state,
//     authDeadline, readBy, relLabel, relN, topic, the policy's cached
//     answer (pol*), unauthMsgs, buf, lr, insecure, limits, bucket,
//     authAt, the trace's upgrade span (tr.upgrade, tr.method:
//     ServeHTTP's until the session runs), and of the close state
//     stopping, stopCode and clientCode, reads the client socket and
//     writes the backend leg
//     (under mu): its forwards are batched in the leg's wsframe.Conn and
//     written when the client socket has nothing more to read, or before
//     the reader waits on anything else (flushBackend);
//   - the backend reader (backendLoop, backendFrames) owns back, a
//     backendReader (backendread.go says what it holds); it reads the
//     backend leg, frames its messages into a batch of its own, and when
//     the backend socket has nothing more to read queues the batch
//     (handOff) and writes the queue to the client itself (drain);
//   - the client writer (writeLoop) writes the queue when another producer
//     (a reply, a push, a close) finds nobody writing it, and pings; it
//     owns nothing;
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
// authority: the identity, its backend leg and what it allows now) and
// subs (the subscriptions; each type says which of its fields mu
// guards), and every data write to the backend leg (one writer; the
// client's forwards and the gateway's own Unsubs and re-Subs must not
// interleave, and a forward's authority check and its write are one
// step). Nobody holding mu waits on the client: replies are queued after
// it is released, and what is queued under it uses push, which never
// waits.
//
// The client's send queue (out, a sendQueue) has its own lock (queue.go
// says what it guards, relay.go how the queue is written). Shared
// otherwise: cw, done, and the close state (close, a closer: once,
// closing, by, ending, dead, gaveUp, slowSeen, sentCode); the trace's
// tracer and link, set before the session starts, which the supervisor
// reads for a lapse's span.
type session struct {
	g       *Gateway
	cfg     *Config
	cc      *websocket.Conn
	remote  string
	src     string    // sourceKey(remote): what the unauthenticated places are shared by
	slot    string    // the subject whose session Gateway.enterUser counts this one as
	counted bool      // slot is counted
	query   string    // "version=…" for the backend, or ""
	tr      sockTrace // the socket's trace (trace.go); its zero value when the upgrade is not traced
	began   time.Time // when the socket was upgraded, if it is traced
	authAt  time.Time // when the Auth message being answered arrived, if it is traced
	ctx     context.Context
	cancel  context.CancelFunc

	// Client reader's.
	state        State
	authDeadline time.Time
	readBy       time.Time // the read deadline extend set last
	relLabel     string    // the controller label of the forwards not yet counted
	relN         int       // how many (reportRelayed)
	topic        string    // the last message's Topic, reused by the next alike (zenith.ScanReusing)
	// replyWaits counts the times the client reader waited in put with a
	// reply the queue had no room for (awaitRoom should leave none).
	replyWaits atomic.Int64
	polOK      bool // the policy's answer for polController and polTopic, polValid
	polNeeded  string
	polValid   bool
	polCtl     string
	polTopic   string
	unauthMsgs int
	msg        []byte        // the message read, reused (readCapped)
	insecure   bool          // RequireTLS, and the connection is not secure
	limits     policy.Limits // the effective limits of the identity
	bucket     bucket        // the message rate's
	authBucket bucket        // the Auth messages' once authenticated

	mu   sync.Mutex    // guards auth and subs, and the data writes to the backend leg
	auth authority     // the identity and its backend leg (live.go)
	subs subscriptions // the client's subscriptions (subs.go)

	out   sendQueue     // the client's send queue (queue.go), with its own lock
	back  backendReader // the backend reader's (backendread.go)
	close closer        // the close state (closing.go)

	// Shared.
	wake  chan struct{} // the client writer has messages to drain (capacity 1)
	cw    *wsframe.Conn // the client's connection, under cc
	pmu   sync.Mutex    // guards pings
	pings []sentPing    // the pings the client has not answered, oldest first (pingClient, ponged)
	done  chan struct{}
	wg    sync.WaitGroup // the writer and the backend reader
}

func newSession(g *Gateway, cc *websocket.Conn, r *http.Request, version string, hasVersion bool, tr sockTrace) *session {
	s := &session{
		g: g, cfg: &g.cfg, cc: cc, remote: g.cfg.ClientIP(r), src: sourceKey(g.cfg.ClientIP(r)),
		state: StateUnauthenticated, tr: tr,
		out:  sendQueue{maxMsgs: g.cfg.SendQueue, maxBytes: g.cfg.SendQueueBytes},
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	if cw, ok := cc.NetConn().(*wsframe.Conn); ok {
		s.cw = cw
		cw.SetHooks(wsframe.Hooks{BeforeRead: s.extend, Idle: s.flushBackend, Stamp: true})
	}
	if hasVersion {
		s.query = "version=" + version // its form is checked: nothing to escape
	}
	s.insecure = g.cfg.RequireTLS && !g.cfg.Secure(r)
	// The request's values, not its cancellation: the request ends at the
	// upgrade (ServeHTTP returns), the session later.
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
	if tr.on() {
		s.began = time.Now()
	}
	return s
}

// run is the session, on the client reader's goroutine: id is the
// identity verified on the upgrade (the verifier asked at at), or nil.
func (s *session) run(id *Identity, at time.Time) {
	defer s.teardown()
	defer contain.Recover(s.g.log, "ws.client_reader", s.crashed)
	s.wg.Add(1)
	contain.Go(s.g.log, "ws.writer", s.writeLoop, s.crashed)
	s.authDeadline = time.Now().Add(s.cfg.AuthTimeout)
	s.cfg.Metrics.Sessions(StateUnauthenticated, 1)
	if id != nil {
		s.g.addUnauth(s.src) // authenticate gives it back again
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

// readLoop reads client messages until the socket fails or closes. After
// closeClient it only drains, until the client answers or CloseGrace ends.
func (s *session) readLoop() {
	cc := s.cc
	var maxMsg int64 // the bound of the next message: s.maxMessage
	cc.SetPongHandler(func(data string) error { s.ponged(data); s.extend(); return nil })
	cc.SetPingHandler(func(data string) error {
		s.extend()
		_ = cc.WriteControl(websocket.PongMessage, []byte(data), deadline(s.cfg.WriteTimeout))
		return nil
	})
	for {
		if !s.close.closing.Load() && !s.close.stopping && !s.awaitRoom() {
			continue // closed as slow: the next read drains
		}
		if s.cw == nil {
			s.extend() // else before each read from the socket (cw.beforeRead)
		}
		if m := s.maxMessage(); m != maxMsg {
			// gorilla's limit counts bytes on the wire, compressed; the
			// decompressed size is counted below.
			maxMsg = m
			cc.SetReadLimit(maxMsg + maxMsg/8 + 1024)
		}
		typ, r, err := cc.NextReader()
		if err != nil {
			s.readFailed(err)
			return
		}
		if s.close.stopping || s.close.closing.Load() {
			continue // draining; the next NextReader discards the message
		}
		if typ != websocket.TextMessage {
			s.closeAfterQueued(websocket.CloseUnsupportedData)
			continue
		}
		s.msg, err = readCapped(s.msg[:0], r, maxMsg+1)
		n := int64(len(s.msg))
		switch {
		case errors.Is(err, websocket.ErrReadLimit):
			s.closeClient(websocket.CloseMessageTooBig) // gorilla has sent it
			continue
		case err != nil:
			if !isConnError(err) {
				s.closeClient(websocket.CloseProtocolError) // e.g. a corrupt deflate stream
			}
			continue // the next NextReader reports a broken connection
		case n > maxMsg:
			s.closeAfterQueued(websocket.CloseMessageTooBig)
			continue
		}
		contain.Point("ws.client_reader")
		s.hold()
		s.handle(s.msg)
		// A buffer grown for a large message is kept while the client
		// sends large ones (growing it again for each would make a
		// megabyte of garbage a message), and let go after a small one:
		// a session holds one message's room at most (readCapped).
		if cap(s.msg) > 64<<10 && n <= 64<<10 {
			s.msg = nil
		}
		s.hold()
	}
}

// awaitRoom holds the client reader back, before it reads a message, while
// the client's queue lacks room for that message's reply besides what the
// reader holds (SendQueueBytes counts the queue, held and the next reply,
// which may echo the whole message): a client that sends and does not
// read then stops being read, its messages left in the sockets' buffers,
// and the reader never waits in put with a reply beyond the queue. It
// waits as long as the queue moves; a queue that has not moved for
// WriteTimeout closes the client as slow (false). (It keeps its buffers:
// let go, they would be garbage the collector lets the heap grow by, and
// room the queue would take.) Client reader only.
func (s *session) awaitRoom() bool {
	need := s.maxMessage() + errorEchoRoom
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var space <-chan struct{}
	for {
		if s.out.HasRoom(need) {
			return true
		}
		if space == nil {
			// Then once more before waiting: a message taken before
			// WaitForSpace does not close space.
			space = s.out.WaitForSpace()
			continue
		}
		s.flushBackend() // what the client sent goes before the wait
		if timer == nil {
			timer = time.NewTimer(s.cfg.WriteTimeout)
		} else {
			timer.Reset(s.cfg.WriteTimeout)
		}
		select {
		case <-space: // the queue moved: wait on, afresh
			space = nil
		case <-timer.C:
			return s.slow()
		case <-s.ctx.Done(): // closing for another reason: the reader drains
			return false
		}
	}
}

// errorEchoRoom is what an Error reply adds to the fields it echoes.
const errorEchoRoom = 256

// hold publishes what the client reader holds beyond the queue
// (sendQueue.Hold): its message buffer's room and the topic it keeps.
// Client reader only.
func (s *session) hold() {
	s.out.Hold(int64(cap(s.msg) + len(s.topic)))
}

// readCapped appends r's bytes to dst until r ends, limit bytes at most.
// dst grows by doubling to 64 KiB, then to the limit, never past it: a
// message of just over half the limit does not cost twice its size, nor a
// megabyte of intermediate buffers.
func readCapped(dst []byte, r io.Reader, limit int64) ([]byte, error) {
	for int64(len(dst)) < limit {
		if len(dst) == cap(dst) {
			// Doubling up to 64 KiB, then at once the limit's room: a large
			// message is the rare one, and growing it by doubling would leave
			// as much garbage again as its size.
			grow := max(int64(cap(dst)), 512)
			if cap(dst) >= 64<<10 {
				grow = limit
			}
			dst = slices.Grow(dst, int(min(grow, limit-int64(len(dst)))))
		}
		end := int(min(int64(cap(dst)), limit))
		n, err := r.Read(dst[len(dst):end])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// maxMessage bounds the client's next message, after decompression:
// MaxMessageBytes once authenticated, and before that what the largest
// Auth message needs (an AuthToken of MaxTokenBytes, with room for
// escapes in its text: .NET escapes Base-64's "+"), so that a socket
// without a credential cannot have the gateway hold a megabyte
// (permessage-deflate inflates a kilobyte to one) until its auth
// deadline. Client reader only.
func (s *session) maxMessage() int64 {
	if s.state == StateAuthenticated {
		return s.cfg.MaxMessageBytes
	}
	return min(s.cfg.MaxMessageBytes, int64(2*base64.StdEncoding.EncodedLen(s.cfg.MaxTokenBytes)+8<<10))
}

func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// now is the time the client's last bytes arrived (the last read from its
// socket returned), for the rate limits: one clock
// reading per read, not per message. Client reader only.
func (s *session) now() time.Time {
	if s.cw != nil && !s.cw.ReadAt().IsZero() {
		return s.cw.ReadAt()
	}
	return time.Now()
}

// sentPing is a ping the gateway sent the client: when, and its payload,
// a random tag the client can learn only by reading the ping.
type sentPing struct {
	at  time.Time
	tag uint64
}

// maxPingsOut bounds the unanswered pings a session remembers.
const maxPingsOut = 16

// ponged notes the client's pong: one that carries the tag of an
// outstanding ping answers it and every older one (the client reads in
// order). An unsolicited pong, or one with a tag the client could not have
// read, answers nothing. Client reader only.
func (s *session) ponged(data string) {
	tag, err := strconv.ParseUint(data, 16, 64)
	if err != nil {
		return
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for i, p := range s.pings {
		if p.tag == tag {
			s.pings = append(s.pings[:0], s.pings[i+1:]...)
			return
		}
	}
}

// extend sets the read deadline: IdleTimeout from now (it runs before each
// read from the client's socket, and again after the idle hook), no later
// than the auth deadline while unauthenticated; while closing, the close
// state's (closer.by). A deadline later than the one set by less than
// IdleTimeout/64 is not set (each costs a timer update, which a busy
// client would pay per message): the idle timeout may end up to that much
// early.
func (s *session) extend() {
	if s.close.closing.Load() {
		return
	}
	d := time.Now().Add(s.cfg.IdleTimeout)
	if s.state != StateAuthenticated && s.authDeadline.Before(d) {
		d = s.authDeadline
	}
	if ahead := d.Sub(s.readBy); ahead >= 0 && ahead < s.cfg.IdleTimeout/64 {
		return
	}
	s.readBy = d
	_ = s.cc.NetConn().SetReadDeadline(d)
	if s.close.closing.Load() { // closeClient ran meanwhile: its deadline wins
		_ = s.cc.NetConn().SetReadDeadline(time.Unix(0, s.close.by.Load()))
	}
}

// readFailed handles the error that ends the read loop.
func (s *session) readFailed(err error) {
	if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
		s.close.clientCode = ce.Code // the client's close, or its answer to ours
		return
	}
	if s.close.closing.Load() {
		return
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		reason := "idle"
		if s.state != StateAuthenticated {
			reason = "authentication timeout"
		}
		s.g.log.Info("ws session closed", zap.String("reason", reason), zap.String("remote", s.remote), zap.String("user", s.auth.id.Subject))
		s.closeClient(websocket.ClosePolicyViolation)
		return
	}
	s.g.log.Debug("ws client gone", zap.String("remote", s.remote), zap.Error(err))
}

// handle answers or forwards one client message.
func (s *session) handle(msg []byte) {
	if s.state != StateAuthenticated {
		s.unauthMsgs++
		if s.unauthMsgs > s.cfg.AuthMaxMessages {
			s.g.log.Info("ws session closed", zap.String("reason", "too many messages before authentication"), zap.String("remote", s.remote))
			s.closeAfterQueued(websocket.ClosePolicyViolation)
			return
		}
	}
	env, err := zenith.ScanReusing(msg, &s.topic)
	if err != nil {
		se, _ := errors.AsType[*zenith.ScanError](err)
		if errors.Is(err, zenith.ErrInvalidUTF8) {
			s.closeAfterQueued(websocket.CloseInvalidFramePayloadData)
			return
		}
		s.g.log.Debug("ws message refused", zap.String("reason", se.Reason), zap.Int64("offset", se.Offset), zap.String("remote", s.remote))
		if s.state == StateAuthenticated && !s.bucket.take(s.now(), &s.limits) {
			// A refused message costs its reply: it counts as any other.
			s.limited(&se.Echo, LimitRate)
			return
		}
		s.replyError(&se.Echo, zenith.CodeDeserialise)
		return
	}
	if env.Controller == "Auth" {
		// Unauthenticated, AuthMaxMessages bounds them; afterwards a bucket
		// of their own, so a client cannot keep the verifier busy.
		if s.state == StateAuthenticated && !s.authBucket.take(s.now(), &authLimits) {
			s.limited(&env, LimitAuth)
			return
		}
		s.flushBackend() // what it forwarded goes before a verification
		s.handleAuth(&env)
		return
	}
	if s.state != StateAuthenticated {
		s.deny(&env, "unauthenticated")
		return
	}
	if !s.bucket.take(s.now(), &s.limits) {
		s.limited(&env, LimitRate)
		return
	}
	if env.Present&zenith.HasTransactionID != 0 && (env.TransactionID < s.cfg.tids.min || env.TransactionID > s.cfg.tids.max) {
		// The backend could not read it: nor would it act on it.
		s.replyError(&env, zenith.CodeDeserialise)
		return
	}
	if s.cfg.tids.reserved(env.TransactionIDText) {
		if ce := s.g.log.Check(zap.DebugLevel, "ws reserved transaction id refused"); ce != nil {
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
	if needed == policy.ScopeOrderPad || needed == policy.ScopeAuthorise {
		s.g.log.Info("ws order message", s.messageFields(&env)...)
	}
	s.forward(msg, &env)
}

// allowed is the policy's answer for env under the session's scopes
// (Policy.Allowed), kept for the next message with the same Controller
// and Topic until the identity changes (polValid). Client reader only.
func (s *session) allowed(env *zenith.Envelope) (bool, string) {
	if !s.polValid || env.Controller != s.polCtl || env.Topic != s.polTopic {
		s.polOK, s.polNeeded = s.cfg.Policy.Allowed(s.auth.id.Scopes, env.Controller, env.Topic)
		s.polCtl, s.polTopic, s.polValid = env.Controller, env.Topic, true
	}
	return s.polOK, s.polNeeded
}

// deny answers env with Error/Authority, counts and logs it.
func (s *session) deny(env *zenith.Envelope, why string) {
	s.cfg.Metrics.Denied(controllerLabel(env.Controller))
	s.g.log.Info("ws message denied", append(s.messageFields(env), zap.String("reason", why))...)
	s.replyError(env, zenith.CodeAuthority)
}

// limited answers env with Error/Limited and counts it; kind is
// LimitSubscriptions or LimitRate.
func (s *session) limited(env *zenith.Envelope, kind string) {
	s.cfg.Metrics.Limited(kind)
	if ce := s.g.log.Check(zap.DebugLevel, "ws message limited"); ce != nil {
		ce.Write(append(s.messageFields(env), zap.String("limit", kind))...)
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
	return append(f, zap.String("remote", s.remote))
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
