package wsauth

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/internal/contain"

	"github.com/gorilla/websocket"
)

// closer is a session's close state. once, closing, by and sentCode are
// the close handshake's, which any goroutine may start (closeClient);
// ending is teardown's, which the client reader starts; dead, gaveUp and
// slowSeen are the client writes' fate, which any writer may find
// (clientWriteFailed, giveUp, countSlow). stopping, stopCode and
// clientCode are the client reader's, and it alone touches them: they
// take no atomic.
type closer struct {
	once     sync.Once    // the close frame is written once (closeClient), or never (giveUp)
	closing  atomic.Bool  // a close frame is sent or the socket is given up
	by       atomic.Int64 // the read deadline while closing, Unix ns
	ending   atomic.Bool  // teardown has begun: leg errors are expected
	dead     atomic.Bool  // a write to the client failed: nothing more is written
	gaveUp   atomic.Bool  // the client's connection was dropped
	slowSeen atomic.Bool  // a slow client was counted
	sentCode atomic.Int32 // the close code the gateway sent the client, 0 if none

	stopping   bool // closeAfterQueued was called: the reader only drains
	stopCode   int  // its code
	clientCode int  // the close code the client sent, 0 if none
}

// writesEnded reports whether nothing more is written to the client: a
// write to it failed (dead) or the close handshake has begun.
func (c *closer) writesEnded() bool { return c.dead.Load() || c.closing.Load() }

// closeAfterQueued closes the client with code once the replies already
// queued are written (the close frame must not overtake them); meanwhile
// the reader only drains. A full queue closes at once. Client reader only.
func (s *session) closeAfterQueued(code int) {
	if s.close.stopping {
		return
	}
	s.close.stopping, s.close.stopCode = true, code
	if !s.tryPut(outMsg{close: code}) {
		s.closeClient(code)
	}
}

// closeClient starts the close handshake with code, once: further reads
// only drain, for CloseGrace at most. Safe from any goroutine.
func (s *session) closeClient(code int) {
	s.close.once.Do(func() {
		by := time.Now().Add(s.g.cfg().Transport.CloseGrace)
		s.close.by.Store(by.UnixNano())
		s.close.sentCode.Store(int32(code))
		s.close.closing.Store(true)
		s.life.cancel() // a verification or a dial under way stops
		_ = s.client.ws.NetConn().SetReadDeadline(by)
		_ = s.client.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(s.g.cfg().Transport.WriteTimeout))
	})
}

// maxLingering bounds the client sockets lingering at once (lingerClose),
// each a goroutine and a small buffer: beyond it a socket is closed at once.
const maxLingering = 1024

// lingerClose ends a client connection whose close frame the client has not
// answered (it stopped reading, or is still reading a backlog with the frame
// behind it, or its read failed after the frame was sent), once the session
// has released everything else: the write side is shut, so that the client
// reads the frame and then EOF, and what it still sends (pongs, messages) is
// read and discarded, CloseLinger and MaxMessageBytes at most, until it
// closes. Closing at once would answer the client's next segment with a
// reset: its writes fail (gorilla's reader returns a pong's failed write
// before it reaches the close frame) and some systems drop what it has not
// read. It is nginx's lingering close. Shutdown ends every lingering socket,
// and starts none.
func (g *Gateway) lingerClose(nc net.Conn) {
	g.mu.Lock()
	if g.closed || g.cfg().Transport.CloseLinger <= 0 || len(g.lingering) >= maxLingering {
		g.mu.Unlock()
		_ = nc.Close()
		return
	}
	g.lingering[nc] = struct{}{}
	g.lwg.Add(1)
	g.mu.Unlock()
	_ = nc.SetReadDeadline(time.Now().Add(g.cfg().Transport.CloseLinger))
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	contain.Go(g.log(), "ws.linger", func() {
		defer g.lwg.Done()
		defer func() {
			g.mu.Lock()
			delete(g.lingering, nc)
			g.mu.Unlock()
			_ = nc.Close()
		}()
		var buf [512]byte
		for left := g.cfg().Transport.MaxMessageBytes; left > 0; {
			n, err := nc.Read(buf[:min(int64(len(buf)), left)])
			left -= int64(n)
			if err != nil {
				return
			}
		}
	}, nil)
}

// lingeringSockets is how many client sockets linger (lingerClose).
func (g *Gateway) lingeringSockets() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.lingering)
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// endLingering ends every lingering socket and waits for their goroutines.
// After g.closed is set, so that no new one starts.
func (g *Gateway) endLingering() {
	g.mu.Lock()
	for nc := range g.lingering {
		_ = nc.SetReadDeadline(aLongTimeAgo)
	}
	g.mu.Unlock()
	g.lwg.Wait()
}

// teardown releases the session, on the client reader's goroutine once the
// read loop has ended: the supervisor is told to leave it alone and its
// subscriptions are forgotten, the backend leg is closed (1000 when the
// client closed normally, else 1001), both sockets, then it waits for the
// writer and the backend reader.
func (s *session) teardown() {
	var began time.Time
	if s.tr.on() {
		began = time.Now()
	}
	if s.close.stopping {
		s.closeClient(s.close.stopCode) // if the writer has not yet
	}
	s.close.ending.Store(true)
	s.reportRelayed()
	s.life.cancel()
	gauge := s.endUnder()
	if s.auth.bc != nil {
		code := websocket.CloseGoingAway
		if s.close.clientCode == websocket.CloseNormalClosure {
			code = websocket.CloseNormalClosure
		}
		_ = s.auth.bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), deadline(time.Second))
		// The backend reader may be writing to the client in its idle
		// hook, perhaps inside its read, which the Close would wait for:
		// nothing more goes to the client now (its close frame went
		// first).
		if s.client.wire != nil {
			s.client.wire.Abort()
		}
		_ = s.auth.bc.Close()
	}
	// A close frame the client has not answered: the socket lingers
	// (lingerClose) once the writer has ended, and nothing more is
	// written to it.
	linger := s.client.wire != nil && s.close.closing.Load() && s.close.clientCode == 0 && !s.close.gaveUp.Load()
	if linger {
		s.close.once.Do(func() {}) // the close frame is written (WriteTimeout at most)
		s.client.wire.Abort()
	} else {
		_ = s.client.ws.Close()
	}
	close(s.life.done)
	s.life.wg.Wait()
	if linger {
		s.g.lingerClose(s.client.wire.NetConn())
	}
	s.g.cfg().Hooks.Metrics.Sessions(gauge, -1)
	if s.in.state != StateAuthenticated {
		s.g.giveUnauth(s.in.place.src)
	}
	if s.in.place.counted {
		s.g.leaveUser(s.in.place.slot)
	}
	s.traceClose(began, gauge)
}

// traceClose records the socket's end, which began at began, in its trace:
// by whom, with which code, in which state. Client reader only.
func (s *session) traceClose(began time.Time, state State) {
	if !s.tr.on() {
		return
	}
	by, code := "connection", 0
	switch {
	case s.close.sentCode.Load() != 0:
		by, code = "gateway", int(s.close.sentCode.Load())
	case s.close.clientCode != 0:
		by, code = "client", s.close.clientCode
	case s.close.gaveUp.Load():
		by = "gateway"
	}
	var id *Identity
	if s.in.state == StateAuthenticated {
		id = &s.auth.id
	}
	s.tr.closed(began, by, code, state, time.Since(s.tr.began), id)
}

// endUnder marks the session ended, so the supervisor leaves it alone, and
// forgets its subscriptions, under s.mu (released in a deferred call): it
// returns the session's state for the gauge.
func (s *session) endUnder() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.ended = true
	gauge := s.auth.standing.state()
	s.dropSubsLocked()
	return gauge
}

// giveUp drops the client (its writes are failing): the reader's read
// fails at once (a read deadline in the past, not a Close, which would
// wait for the reader if it were in its idle hook), and teardown closes
// the socket. No close handshake, no linger.
func (s *session) giveUp() {
	s.close.gaveUp.Store(true)
	s.life.cancel() // a reader waiting for room (awaitRoom) stops waiting
	s.close.once.Do(func() { s.close.closing.Store(true) })
	s.close.by.Store(aLongTimeAgo.UnixNano()) // extend, racing, sets this
	_ = s.client.ws.NetConn().SetReadDeadline(aLongTimeAgo)
}
