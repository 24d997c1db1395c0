package wsauth

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
)

// dialBackend opens the backend leg, trying each upstream in turn, each
// within DialTimeout, with the identity headers and the client's version
// and sub-protocol. Client reader only. On failure code is the close code
// for the client: 1011 when every upstream answered and refused (4xx),
// else 1013 (try again later). Neither carries detail.
func (s *session) dialBackend() (*websocket.Conn, int) {
	h := http.Header{}
	if s.cfg.BackendHeaders != nil {
		s.cfg.BackendHeaders(h, s.id)
	}
	d := s.g.dialer
	if p := s.cc.Subprotocol(); p != "" {
		d.Subprotocols = []string{p}
	}
	code := websocket.CloseInternalServerErr
	for i, u := range s.cfg.Upstreams {
		target := u
		if s.query != "" {
			if strings.Contains(u, "?") {
				target += "&" + s.query
			} else {
				target += "?" + s.query
			}
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
		bc, resp, err := d.DialContext(ctx, target, h)
		cancel()
		if err == nil {
			return bc, 0
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			_ = resp.Body.Close()
		}
		if status == 0 || status >= 500 {
			code = websocket.CloseTryAgainLater
		}
		s.g.log.Warn("ws backend dial failed", zap.Int("upstream", i), zap.Int("status", status), zap.Error(err))
	}
	return nil, code
}

// backendLoop is the backend reader: it reads each backend message whole
// (the one copy, from the socket into its buffer; never JSON-parsed) and
// hands it to the client writer, but for the backend's answers to the
// gateway's own messages, found by their reserved TransactionID
// (answersGateway), which it drops. Until the gateway has sent the backend
// a message of its own (ownSent) there is no such answer, and the search
// is skipped. It waits on the client only while this
// client's queue is full, WriteTimeout at most, after which the client is
// closed as not reading (enqueue). When the backend leg ends it queues the
// matching close behind the messages already queued.
func (s *session) backendLoop(bc *websocket.Conn) {
	defer s.wg.Done()
	bc.SetReadLimit(s.cfg.MaxBackendMessageBytes)
	for {
		typ, r, err := bc.NextReader()
		if err != nil {
			s.backendEnded(err)
			return
		}
		bp := msgBufs.Get().(*[]byte)
		buf := bytes.NewBuffer((*bp)[:0])
		if _, err := buf.ReadFrom(r); err != nil {
			s.backendEnded(err)
			return
		}
		*bp = buf.Bytes()
		if s.ownSent.Load() && answersGateway(*bp) {
			releaseBuf(bp) // the backend's answer to the gateway's own message
			continue
		}
		if !s.enqueue(outMsg{typ: typ, data: *bp, buf: bp, backend: true}) {
			return
		}
	}
}

// msgBufs are the backend messages' buffers: each is read into once (the
// one copy), written to the client, and reused; a buffer grown past 64 KiB
// is left to the collector.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// releaseBuf returns a written message's buffer to msgBufs. Client writer
// only, after the write: gorilla holds no reference once WriteMessage
// returns.
func releaseBuf(bp *[]byte) {
	if bp == nil || cap(*bp) > 64<<10 {
		return
	}
	*bp = (*bp)[:0]
	msgBufs.Put(bp)
}

// backendEnded maps the backend leg's end to the client's close code: the
// backend's own code when it sent one the client may receive (1000 for a
// close without one), else 1011.
func (s *session) backendEnded(err error) {
	if s.ending.Load() || s.closing.Load() {
		return
	}
	code := websocket.CloseInternalServerErr
	if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
		switch c := ce.Code; {
		case c == websocket.CloseNoStatusReceived:
			code = websocket.CloseNormalClosure
		case sendableCloseCode(c):
			code = c
		}
		s.g.log.Info("ws backend closed", zap.Int("code", ce.Code), zap.String("user", s.user))
	} else {
		s.g.log.Warn("ws backend leg failed", zap.String("user", s.user), zap.Error(err))
	}
	if !s.enqueue(outMsg{close: code}) {
		s.closeClient(code)
	}
}

// sendableCloseCode reports whether code may be sent in a close frame
// (RFC 6455 §7.4).
func sendableCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// writeLoop is the client writer: it writes queued messages, each within
// WriteTimeout, and pings every PingInterval, until done. A write that
// fails or times out gives the client up: a client that stops reading is
// counted and its connection dropped, which ends the reader.
func (s *session) writeLoop() {
	defer s.wg.Done()
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	dead := false // writes failed: only drain the queue, so no producer waits
	for {
		select {
		case <-s.done:
			return
		case m := <-s.sendq:
			s.queued.Add(-int64(len(m.data)))
			select {
			case s.drained <- struct{}{}:
			default:
			}
			if m.close != 0 {
				s.closeClient(m.close)
				continue
			}
			if dead || s.closing.Load() {
				continue
			}
			_ = s.cc.SetWriteDeadline(deadline(s.cfg.WriteTimeout))
			if err := s.cc.WriteMessage(m.typ, m.data); err != nil {
				if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
					s.countSlow("client write timeout")
				}
				s.giveUp()
				dead = true
				continue
			}
			releaseBuf(m.buf)
			if m.backend {
				s.cfg.Metrics.Delivered()
			}
		case <-ping.C:
			if dead || s.closing.Load() {
				continue
			}
			_ = s.cc.WriteControl(websocket.PingMessage, nil, deadline(s.cfg.WriteTimeout))
		}
	}
}

// enqueue hands m to the client writer. When the queue is full (in
// messages, or in bytes: SendQueueBytes, a single larger message passing
// when the queue is empty) it waits for the writer, at most WriteTimeout:
// a client that cannot take messages for that long has stopped reading, is
// closed with 1008 and counted. Only this session's legs ever wait here.
func (s *session) enqueue(m outMsg) bool {
	n := int64(len(m.data))
	var timer *time.Timer
	expired := func() <-chan time.Time {
		if timer == nil {
			timer = time.NewTimer(s.cfg.WriteTimeout)
		}
		return timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		q := s.queued.Load()
		if q == 0 || q+n <= s.cfg.SendQueueBytes {
			break
		}
		select {
		case <-s.drained:
		case <-expired():
			return s.slow()
		case <-s.done:
			return false
		}
	}
	s.queued.Add(n)
	select {
	case s.sendq <- m:
		return true
	default:
	}
	select {
	case s.sendq <- m:
		return true
	case <-expired():
	case <-s.done:
		s.queued.Add(-n)
		return false
	}
	s.queued.Add(-n)
	return s.slow()
}

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
	if s.closing.Load() || s.ending.Load() || !s.slowSeen.CompareAndSwap(false, true) {
		return false
	}
	s.cfg.Metrics.SlowClient()
	s.g.log.Info("ws session closed", zap.String("reason", reason), zap.String("remote", s.remote), zap.String("user", s.user))
	return true
}
