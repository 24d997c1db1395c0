package marketdata

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// conn is one client connection.
//
// Goroutines: the reader (serve, on the ServeHTTP goroutine) reads and
// answers messages; the writer (writeLoop) is the only one that writes
// data frames and pings. Anyone may queue a message (enqueue: the reader,
// the market's ticker) or end the connection (kill). Control frames that
// gorilla writes itself (pong, the close echo, 1009) go through its
// WriteControl, which is safe beside the writer.
type conn struct {
	s       *Server
	ws      *websocket.Conn
	logger  *zap.Logger
	user    string // from the gateway's header; "" when none
	version string // the ?version= of the upgrade

	send   chan []byte  // queued messages; never closed
	queued atomic.Int64 // the bytes of the messages in send

	killOnce    sync.Once
	done        chan struct{} // closed by kill: the connection is ending
	closeCode   int           // written once by kill, before done closes
	closeReason string

	readerDone chan struct{} // closed when the reader has stopped reading
	writerDone chan struct{} // closed when the writer has returned
}

func newConn(s *Server, ws *websocket.Conn, user, version string) *conn {
	return &conn{
		s: s, ws: ws, logger: s.logger, user: user, version: version,
		send:       make(chan []byte, s.cfg.SendQueue),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// enqueue queues msg for the writer without blocking. A full queue means
// the client reads slower than the server sends: the connection is closed
// (1008) rather than buffered without bound. It reports whether msg was
// queued.
func (c *conn) enqueue(msg []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	// One message larger than the bound passes when nothing else waits, as the
	// gateway's queue lets it.
	if n := c.queued.Add(int64(len(msg))); n > c.s.cfg.SendQueueBytes && n != int64(len(msg)) {
		c.queued.Add(-int64(len(msg)))
		c.logger.Info("closing a slow client", zap.String("user", c.user), zap.Int64("send_queue_bytes", c.s.cfg.SendQueueBytes))
		c.kill(websocket.ClosePolicyViolation, "too slow")
		return false
	}
	select {
	case c.send <- msg:
		return true
	default:
		c.queued.Add(-int64(len(msg)))
		c.logger.Info("closing a slow client", zap.String("user", c.user), zap.Int("send_queue", cap(c.send)))
		c.kill(websocket.ClosePolicyViolation, "too slow")
		return false
	}
}

// kill ends the connection. The first call wins: its code (0 for none,
// when the connection is already broken or the client closed it) is sent
// in the close frame by the writer. It never blocks.
func (c *conn) kill(code int, reason string) {
	c.killOnce.Do(func() {
		c.closeCode, c.closeReason = code, reason
		close(c.done)
	})
}

// serve runs the connection: it starts the writer, reads until the
// connection fails or closes, and returns once the writer has returned.
func (c *conn) serve() {
	// A panic in either loop drops this connection only.
	drop := func() { c.kill(0, ""); _ = c.ws.NetConn().Close() }
	defer contain.Recover(c.logger, "demo.reader", drop)
	contain.Go(c.logger, "demo.writer", c.writeLoop, drop)
	c.readLoop()
	close(c.readerDone)
	c.kill(0, "")
	<-c.writerDone
	c.logger.Debug("connection closed", zap.String("user", c.user), zap.Int("code", c.closeCode))
}

// readLoop reads messages until an error. After kill it keeps reading,
// and discards, until the client's close frame or the writer dropping the
// connection, so that the close handshake can complete.
func (c *conn) readLoop() {
	cfg := &c.s.cfg
	c.ws.SetReadLimit(cfg.ReadLimit)
	alive := func() { _ = c.ws.SetReadDeadline(time.Now().Add(cfg.IdleTimeout)) }
	alive()
	c.ws.SetPongHandler(func(string) error { alive(); return nil })
	pong := c.ws.PingHandler()
	c.ws.SetPingHandler(func(data string) error { alive(); return pong(data) })
	for {
		kind, msg, err := c.ws.ReadMessage()
		if err != nil {
			c.readFailed(err)
			return
		}
		alive()
		select {
		case <-c.done:
			continue
		default:
		}
		switch {
		case kind != websocket.TextMessage:
			c.kill(websocket.CloseUnsupportedData, "text frames only")
		case !utf8.Valid(msg):
			c.kill(websocket.CloseInvalidFramePayloadData, "invalid UTF-8")
		default:
			c.handle(msg)
		}
	}
}

// readFailed ends the connection for the reader's error.
func (c *conn) readFailed(err error) {
	netErr, isNetErr := errors.AsType[net.Error](err)
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		// gorilla has sent the close frame (1009) already.
		c.kill(websocket.CloseMessageTooBig, "message too big")
	case isNetErr && netErr.Timeout():
		c.kill(websocket.ClosePolicyViolation, "idle")
	default: // the client closed (gorilla echoed its close frame) or vanished
		c.kill(0, "")
	}
	c.logger.Debug("read ended", zap.String("user", c.user), zap.Error(err))
}

// writeLoop writes queued messages and pings until the connection ends,
// then closes it: a close frame when kill gave a code, a bounded wait for
// the reader to see the client's answer, and the TCP connection.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer close(c.writerDone)
	cfg := &c.s.cfg
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			c.finish()
			return
		default:
		}
		select {
		case msg := <-c.send:
			c.queued.Add(-int64(len(msg)))
			_ = c.ws.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, msg); err != nil {
				c.logger.Debug("write failed", zap.String("user", c.user), zap.Error(err))
				c.kill(0, "")
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteTimeout)); err != nil {
				c.logger.Debug("ping failed", zap.String("user", c.user), zap.Error(err))
				c.kill(0, "")
			}
		case <-c.done:
		}
	}
}

// finish closes the connection once it is killed.
func (c *conn) finish() {
	grace := c.s.cfg.CloseGrace
	if c.closeCode != 0 {
		msg := websocket.FormatCloseMessage(c.closeCode, c.closeReason)
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(grace))
	}
	t := time.NewTimer(grace)
	select {
	case <-c.readerDone:
	case <-t.C:
	}
	t.Stop()
	_ = c.ws.Close()
}
