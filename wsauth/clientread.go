package wsauth

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// clientReader is the client reader's state. The client reader is the
// goroutine ServeHTTP starts after the upgrade (on an extended CONNECT,
// ServeHTTP's own): run and everything it calls. It alone touches this
// state; place.src, query and insecure are set before it starts.
type clientReader struct {
	state        State
	authDeadline time.Time
	readBy       time.Time     // the read deadline extend set last
	unauthMsgs   int           // the messages read while unauthenticated
	msg          []byte        // the message read, reused (readCapped)
	topic        string        // the last message's Topic, reused by the next alike (zenith.ScanReusing)
	policy       policyCache   // the policy's last answer (allowed)
	relayed      relayCount    // the forwards not yet counted (reportRelayed)
	limits       policy.Limits // the effective limits of the identity
	conf         uint64        // the gen of the configuration limits and policy were taken from (refresh)
	bucket       bucket        // the message rate's
	authBucket   bucket        // the Auth messages' once authenticated
	insecure     bool          // RequireTLS, and the connection is not secure
	query        string        // "version=…" for the backend, or ""
	place        heldPlace     // what the session holds of the Gateway's places

	// replyWaits counts the times the client reader waited in put with a
	// reply the queue had no room for (awaitRoom should leave none); a
	// test reads it.
	replyWaits atomic.Int64
}

// heldPlace is what a session holds of the Gateway's places (admit.go):
// an unauthenticated place, counted by its source until it authenticates,
// and then one of its user's sessions. Teardown gives back what it holds.
type heldPlace struct {
	src     string // sourceKey(remote): what the unauthenticated places are shared by
	slot    string // the subject whose session Gateway.enterUser counts this one as
	counted bool   // slot is counted
}

// policyCache is the policy's answer (ok, needed) for one Controller and
// Topic under the identity's scopes, kept while valid: until the identity
// changes.
type policyCache struct {
	valid             bool
	controller, topic string
	ok                bool
	needed            string
}

// relayCount is a run of forwards not yet counted, all of one controller
// label.
type relayCount struct {
	label string // the controller label of the forwards not yet counted
	n     int    // how many (reportRelayed)
}

// readLoop reads client messages until the socket fails or closes. After
// closeClient it only drains, until the client answers or CloseGrace ends.
func (s *session) readLoop() {
	cc := s.client.ws
	var maxMsg int64 // the bound of the next message: s.maxMessage
	cc.SetPongHandler(func(data string) error { s.pings.Pong(data); s.extend(); return nil })
	cc.SetPingHandler(func(data string) error {
		s.extend()
		_ = cc.WriteControl(websocket.PongMessage, []byte(data), deadline(s.g.cfg().Transport.WriteTimeout))
		return nil
	})
	for {
		if !s.close.closing.Load() && !s.close.stopping && !s.awaitRoom() {
			continue // closed as slow: the next read drains
		}
		if s.client.wire == nil {
			s.extend() // else before each read from the socket (wire's BeforeRead hook)
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
		s.in.msg, err = readCapped(s.in.msg[:0], r, maxMsg+1)
		n := int64(len(s.in.msg))
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
		s.handle(s.in.msg)
		// A buffer grown for a large message is kept while the client
		// sends large ones (growing it again for each would make a
		// megabyte of garbage a message), and let go after a small one:
		// a session holds one message's room at most (readCapped).
		if cap(s.in.msg) > 64<<10 && n <= 64<<10 {
			s.in.msg = nil
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
			timer = time.NewTimer(s.g.cfg().Transport.WriteTimeout)
		} else {
			timer.Reset(s.g.cfg().Transport.WriteTimeout)
		}
		select {
		case <-space: // the queue moved: wait on, afresh
			space = nil
		case <-timer.C:
			return s.slow()
		case <-s.life.ctx.Done(): // closing for another reason: the reader drains
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
	s.out.Hold(int64(cap(s.in.msg) + len(s.in.topic)))
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
	if s.in.state == StateAuthenticated {
		return s.g.cfg().Transport.MaxMessageBytes
	}
	return min(s.g.cfg().Transport.MaxMessageBytes, int64(2*base64.StdEncoding.EncodedLen(s.g.cfg().Auth.MaxTokenBytes)+8<<10))
}

// isConnError reports whether err is the connection's failure (a network
// error, a stream cut short, a closed socket) rather than the message's.
func isConnError(err error) bool {
	_, isNet := errors.AsType[net.Error](err)
	return isNet || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// now is the time the client's last bytes arrived (the last read from its
// socket returned), for the rate limits: one clock
// reading per read, not per message. Client reader only.
func (s *session) now() time.Time {
	if s.client.wire != nil && !s.client.wire.ReadAt().IsZero() {
		return s.client.wire.ReadAt()
	}
	return time.Now()
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
	d := time.Now().Add(s.g.cfg().Transport.IdleTimeout)
	if s.in.state != StateAuthenticated && s.in.authDeadline.Before(d) {
		d = s.in.authDeadline
	}
	if ahead := d.Sub(s.in.readBy); ahead >= 0 && ahead < s.g.cfg().Transport.IdleTimeout/64 {
		return
	}
	s.in.readBy = d
	_ = s.client.ws.NetConn().SetReadDeadline(d)
	if s.close.closing.Load() { // closeClient ran meanwhile: its deadline wins
		_ = s.client.ws.NetConn().SetReadDeadline(time.Unix(0, s.close.by.Load()))
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
		if s.in.state != StateAuthenticated {
			reason = "authentication timeout"
		}
		s.g.log().Info("ws session closed", zap.String("reason", reason), zap.String("remote", s.client.remote), zap.String("user", s.auth.id.Subject))
		s.closeClient(websocket.ClosePolicyViolation)
		return
	}
	s.g.log().Debug("ws client gone", zap.String("remote", s.client.remote), zap.Error(err))
}
