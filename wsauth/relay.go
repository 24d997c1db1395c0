package wsauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// dialBackend opens the backend leg, trying each upstream in turn, each
// within DialTimeout, with the identity headers and the client's version
// and sub-protocol; leg is what it negotiated of permessage-deflate
// (Backend.Compression). Client reader only. On failure code is the close
// code for the client: 1011 when every upstream answered and refused
// (4xx), else 1013 (try again later). Neither carries detail.
func (s *session) dialBackend() (bc *websocket.Conn, leg legDeflate, code int) {
	h := http.Header{}
	if s.g.cfg().Hooks.BackendHeaders != nil {
		s.g.cfg().Hooks.BackendHeaders(h, s.auth.id)
	}
	d := s.g.dialer
	if p := s.client.ws.Subprotocol(); p != "" {
		d.Subprotocols = []string{p}
	}
	code = websocket.CloseInternalServerErr
	for i, u := range s.g.cfg().Backend.Upstreams {
		target := u
		if s.in.query != "" {
			if strings.Contains(u, "?") {
				target += "&" + s.in.query
			} else {
				target += "?" + s.in.query
			}
		}
		ctx, cancel := context.WithTimeout(s.life.ctx, s.g.cfg().Backend.DialTimeout)
		var dd wsframe.Dialed
		bc, resp, err := d.DialContext(dd.Context(ctx), target, h)
		cancel()
		if err != nil {
			err = dd.Err(err)
		}
		if err == nil {
			if leg, err = checkUpgradeAnswer(resp, d.Subprotocols, d.EnableCompression); err == nil {
				bc.EnableWriteCompression(false) // the gateway compresses nothing it sends the backend
				return bc, leg, 0
			}
			_ = bc.Close()
			s.g.log().Warn("ws backend dial failed", zap.Int("upstream", i), zap.Int("status", resp.StatusCode), zap.Error(err))
			code = websocket.CloseInternalServerErr // a backend that answers so is broken: 1011, not "try again"
			continue
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			_ = resp.Body.Close()
		}
		if status == 0 || status >= 500 {
			code = websocket.CloseTryAgainLater
		}
		s.g.log().Warn("ws backend dial failed", zap.Int("upstream", i), zap.Int("status", status), zap.Error(err))
	}
	return nil, legDeflate{}, code
}

// checkUpgradeAnswer fails a backend's 101 that names an extension the
// gateway did not offer (none, unless deflate: then permessage-deflate as
// acceptedDeflate checks it) or a sub-protocol the gateway did not ask
// for: RFC 6455 §4.1 has the client fail the connection. Gorilla's Dialer
// accepts both, and permessage-deflate accepted unoffered fails later,
// with a vaguer error, at the first compressed frame.
func checkUpgradeAnswer(resp *http.Response, asked []string, deflate bool) (legDeflate, error) {
	var leg legDeflate
	if ext := resp.Header.Values("Sec-WebSocket-Extensions"); len(ext) > 0 {
		if !deflate {
			return leg, fmt.Errorf("the backend answered the upgrade with an extension the gateway did not offer (%.64q)", strings.Join(ext, ", "))
		}
		var err error
		if leg, err = acceptedDeflate(ext); err != nil {
			return leg, err
		}
	}
	protos := resp.Header.Values("Sec-WebSocket-Protocol")
	switch {
	case len(protos) == 0:
		return leg, nil
	case len(protos) == 1 && slices.Contains(asked, protos[0]):
		return leg, nil
	}
	return leg, fmt.Errorf("the backend answered the upgrade with a sub-protocol the gateway did not ask for (%.64q)", strings.Join(protos, ", "))
}

// The client's send queue (sendQueue, queue.go) is written to the client
// by one goroutine at a time, the flusher, batched (drain): the backend
// reader for its own messages, before it reads the backend again, or the
// client writer, woken (wake) by the other producers when nobody is
// flushing. The backend reader frames its messages itself, into a batch
// of its own (backendReader.batch), which it queues as one entry (handOff)
// when the backend has nothing more to read or the batch is full.

// producer is who queues a message, for put.
type producer uint8

const (
	fromClientReader  producer = iota // flushes the backend leg before it waits
	fromBackendReader                 // drains the queue itself
	fromOther                         // wakes the client writer
)

// put queues m for the client. The backend reader's messages are written
// by the backend reader itself (drain, when its socket runs dry); other
// producers wake the client writer unless a flusher is at work. When the
// queue is full (in messages, or in bytes) the backend reader drains it
// itself when nobody else is; otherwise the producer waits for room, at
// most WriteTimeout: a client that cannot take messages for that long
// has stopped reading, is closed with 1008 and counted. Only this
// session's legs ever wait here.
func (s *session) put(m outMsg, from producer) bool {
	var timer *time.Timer
	var space <-chan struct{}
	for {
		ok, flushing := s.out.Push(m)
		if ok {
			if timer != nil {
				timer.Stop()
			}
			if !flushing && from != fromBackendReader {
				s.wakeWriter()
			}
			return true
		}
		if from == fromBackendReader && !flushing {
			s.drain()
			space = nil
			continue
		}
		if space == nil {
			// Then once more before waiting: a message taken before
			// WaitForSpace does not close space.
			space = s.out.WaitForSpace()
			continue
		}
		if from == fromClientReader {
			s.in.replyWaits.Add(1)
			s.flushBackend() // it must not wait behind the client
		}
		if timer == nil {
			timer = time.NewTimer(s.g.cfg().Transport.WriteTimeout)
		}
		select {
		case <-space:
			space = nil
		case <-timer.C:
			return s.slow()
		case <-s.life.done:
			timer.Stop()
			return false
		}
	}
}

// tryPut queues m without waiting; false when the queue is full.
func (s *session) tryPut(m outMsg) bool {
	ok, flushing := s.out.Push(m)
	if ok && !flushing {
		s.wakeWriter()
	}
	return ok
}

// wakeWriter tells the client writer the queue has messages.
func (s *session) wakeWriter() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// drain writes the queued messages to the client, in order, batched into
// as few writes as it can (the client wsframe.Conn's AppendFrame and Flush,
// each flush within WriteTimeout): the caller becomes the flusher, unless
// another goroutine is, and writes until the queue is empty (flush). A
// close marker is sent after what precedes it is written. Once writes
// have failed (dead) or the close handshake has begun, messages are only
// taken and dropped, so no producer waits.
func (s *session) drain() {
	if s.out.StartFlush() {
		s.flush()
	}
}

// flush is drain's work, the caller being the flusher: it writes the
// queue's messages until the queue is empty, and then ends its turn.
func (s *session) flush() {
	delivered := 0
	for {
		m, ok := s.out.Pop()
		if !ok {
			delivered = s.flushClient(delivered)
			if s.out.EndFlush() {
				return
			}
			continue
		}
		delivered = s.writeOut(&m, delivered)
	}
}

// writeOut writes m, one message taken from the queue, into the client's
// batch; delivered counts the backend messages batched and not yet
// flushed. The flusher only.
func (s *session) writeOut(m *outMsg, delivered int) int {
	switch {
	case m.close != 0:
		delivered = s.flushClient(delivered) // the close frame must not overtake them
		s.closeClient(m.close)
	case s.close.writesEnded():
	case m.framed > 0:
		err := s.client.wire.AppendFrames(m.data, m.buf)
		m.buf = nil // the wsframe.Conn's now
		if err != nil {
			s.clientWriteFailed(err)
		} else {
			delivered += m.framed
		}
	case s.client.wire == nil:
		// Not a connection of the gateway's: gorilla frames it.
		_ = s.client.ws.SetWriteDeadline(deadline(s.g.cfg().Transport.WriteTimeout))
		if err := s.client.ws.WriteMessage(m.typ, m.data); err != nil {
			s.clientWriteFailed(err)
		} else if m.backend {
			s.g.cfg().Hooks.Metrics.Delivered(1)
		}
	default:
		if err := s.appendOut(m); err != nil {
			s.clientWriteFailed(err)
		} else if m.backend {
			delivered++
		}
	}
	m.release()
	return delivered
}

// flushClient writes the client's batch and counts its delivered backend
// messages; it returns 0, the count of the next batch. The flusher only.
func (s *session) flushClient(delivered int) int {
	if s.client.wire == nil {
		return 0
	}
	if err := s.client.wire.Flush(); err != nil {
		s.clientWriteFailed(err)
		return 0
	}
	if delivered > 0 {
		s.g.cfg().Hooks.Metrics.Delivered(delivered)
	}
	return 0
}

// clientWriteFailed gives the client up after a write to it failed: a
// client that stops reading (the write timed out) is counted and its
// connection dropped, which ends the reader. After a close frame nothing
// more is written, and that is no failure.
func (s *session) clientWriteFailed(err error) {
	if errors.Is(err, websocket.ErrCloseSent) || s.close.dead.Swap(true) {
		return
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		s.countSlow("client write timeout")
	}
	s.giveUp()
}

// writeLoop is the client writer: it drains the queue when woken (the
// messages other producers than the backend reader queued), and pings
// every PingInterval, until done. At each ping an empty queue's ring goes
// back to the collector: an idle session holds none, a busy one keeps
// its own.
func (s *session) writeLoop() {
	defer s.life.wg.Done()
	ping := time.NewTicker(s.g.cfg().Transport.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-s.life.done:
			return
		case <-s.wake:
			contain.Point("ws.writer")
			s.drain()
		case <-ping.C:
			s.out.Trim()
			if s.close.writesEnded() {
				continue
			}
			s.pingClient()
			s.pingBackend()
		}
	}
}

// pingClient pings the client, its payload a random tag (clientPings),
// unless the oldest ping the client has not answered is older than
// IdleTimeout: a client that does not answer pings does not read (a pong
// is written only as its reader reaches the ping), however much it sends,
// so it is closed (1008) and counted as a slow client. Its backlog behind
// the ping is then at most IdleTimeout and a PingInterval old, and its
// socket lingers that long after the close (CloseLinger), so it still
// reaches the close frame. Client writer only.
func (s *session) pingClient() {
	payload, overdue := s.pings.Send(time.Now(), s.g.cfg().Transport.IdleTimeout)
	if overdue {
		if s.countSlow("client not answering pings") {
			s.closeClient(websocket.ClosePolicyViolation)
		}
		return
	}
	_ = s.client.ws.WriteControl(websocket.PingMessage, payload, deadline(s.g.cfg().Transport.WriteTimeout))
}

// pingBackend pings the backend leg, if open, so that a live backend that
// has nothing to send still sends something (its pong) within
// IdleTimeout, and a lost one is found (extendBackend). The ping goes
// after what the client reader batched for the backend (wsframe.Conn.Write),
// and waits for a write to the leg under way, WriteTimeout at most (a
// backend that does not read fails that write anyway). Client writer
// only.
func (s *session) pingBackend() {
	// Never waiting on the backend leg: a lock held elsewhere, or a write to the
	// leg under way, means the leg is busy, and this interval's ping is skipped
	// (the next comes a PingInterval later, within IdleTimeout).
	if !s.mu.TryLock() {
		return
	}
	bc, bw := s.auth.bc, s.auth.bw
	s.mu.Unlock()
	if bc == nil || s.close.ending.Load() || bw != nil && bw.Writing() {
		return
	}
	_ = bc.WriteControl(websocket.PingMessage, nil, deadline(time.Second))
}

// flushBackend writes the client's messages batched for the backend leg
// (forward appends them; a full batch is written at once). Client reader
// only: when the client socket has nothing more to read, before it waits
// (the client leg's idle), so a message waits only while the reader has
// more to read, and before it waits on anything else.
func (s *session) flushBackend() {
	s.reportRelayed()
	if s.auth.bw == nil || s.close.ending.Load() {
		return
	}
	if err := s.auth.bw.Flush(); err != nil {
		s.backendWriteFailed(err)
	}
}

// backendWriteFailed logs a failed write to the backend leg and closes the
// client with 1011. Client reader only.
func (s *session) backendWriteFailed(err error) {
	s.g.log().Warn("ws backend write failed", zap.String("user", s.auth.id.Subject), zap.Error(err))
	s.closeAfterQueued(websocket.CloseInternalServerErr)
}

// enqueue queues one of the client reader's replies (put).
func (s *session) enqueue(m outMsg) bool { return s.put(m, fromClientReader) }

// slow closes a client that stopped reading (1008) and counts it; false.
func (s *session) slow() bool {
	if s.countSlow("client not reading") {
		s.closeClient(websocket.ClosePolicyViolation)
	}
	return false
}

// countSlow counts and logs a slow client once per session, and not once
// the session is closing for another reason.
func (s *session) countSlow(reason string) bool {
	if s.close.closing.Load() || s.close.ending.Load() || !s.close.slowSeen.CompareAndSwap(false, true) {
		return false
	}
	s.g.cfg().Hooks.Metrics.SlowClient()
	s.g.log().Info("ws session closed", zap.String("reason", reason), zap.String("remote", s.client.remote), zap.String("user", s.auth.subject()))
	return true
}
