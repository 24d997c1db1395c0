package wsauth

import (
	"io"
	"time"

	"github.com/gorilla/websocket"
)

// closeAfterQueued closes the client with code once the replies already
// queued are written (the close frame must not overtake them); meanwhile
// the reader only drains. A full queue closes at once. Client reader only.
func (s *session) closeAfterQueued(code int) {
	if s.stopping {
		return
	}
	s.stopping, s.stopCode = true, code
	if !s.tryPut(outMsg{close: code}) {
		s.closeClient(code)
	}
}

// closeClient starts the close handshake with code, once: further reads
// only drain, for CloseGrace at most. Safe from any goroutine.
func (s *session) closeClient(code int) {
	s.closeOnce.Do(func() {
		by := time.Now().Add(s.cfg.CloseGrace)
		s.closeBy.Store(by.UnixNano())
		s.closing.Store(true)
		s.cancel() // a verification or a dial under way stops
		_ = s.cc.NetConn().SetReadDeadline(by)
		_ = s.cc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(s.cfg.WriteTimeout))
	})
}

// linger ends a connection whose close frame the client has not answered
// (it stopped reading, or its read failed after the frame was sent): the
// write side is shut, so the client reads the frame then EOF, and what
// the client still sends is discarded until closeBy, instead of a reset
// that could destroy the frame unread. Client reader only.
func (s *session) linger() {
	nc := s.cc.NetConn()
	by := time.Unix(0, s.closeBy.Load())
	if time.Until(by) <= 0 {
		return
	}
	_ = nc.SetReadDeadline(by)
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, s.cfg.MaxMessageBytes))
}

// teardown releases the session, on the client reader's goroutine once the
// read loop has ended: the supervisor is told to leave it alone and its
// subscriptions are forgotten, the backend leg is closed (1000 when the
// client closed normally, else 1001), both sockets, then it waits for the
// writer and the backend reader.
func (s *session) teardown() {
	if s.stopping {
		s.closeClient(s.stopCode) // if the writer has not yet
	}
	s.ending.Store(true)
	s.reportRelayed()
	s.cancel()
	gauge := s.endUnder()
	if s.bc != nil {
		code := websocket.CloseGoingAway
		if s.clientCode == websocket.CloseNormalClosure {
			code = websocket.CloseNormalClosure
		}
		_ = s.bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(time.Second))
		// The backend reader may be writing to the client in its idle
		// hook, perhaps inside its read, which the Close would wait for:
		// nothing more goes to the client now (its close frame went
		// first).
		if s.cw != nil {
			s.cw.abort()
		}
		_ = s.bc.Close()
	}
	if s.closing.Load() && s.clientCode == 0 && !s.gaveUp.Load() {
		s.linger()
	}
	_ = s.cc.Close()
	close(s.done)
	s.wg.Wait()
	s.cfg.Metrics.Sessions(gauge, -1)
	if s.state != StateAuthenticated {
		s.g.giveUnauth(s.src)
	}
	if s.counted {
		s.g.leaveUser(s.slot)
	}
}

// endUnder marks the session ended, so the supervisor leaves it alone, and
// forgets its subscriptions, under s.mu (released in a deferred call): it
// returns the session's state for the gauge.
func (s *session) endUnder() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	gauge := s.authority.state()
	s.dropSubsLocked()
	return gauge
}

// giveUp drops the client (its writes are failing): the reader's read
// fails at once (a read deadline in the past, not a Close, which would
// wait for the reader if it were in its idle hook), and teardown closes
// the socket. No close handshake, no linger.
func (s *session) giveUp() {
	s.gaveUp.Store(true)
	s.closeOnce.Do(func() { s.closing.Store(true) })
	s.closeBy.Store(aLongTimeAgo.UnixNano()) // extend, racing, sets this
	_ = s.cc.NetConn().SetReadDeadline(aLongTimeAgo)
}
