package wsauth

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// backendFrames is the backend reader on a TCP backend leg (the leg's
// frameConn has rc): it reads the frames itself from the frameConn's
// buffer, not through gorilla's reader, so a message the buffer holds
// whole is framed for the client straight from it, one copy (socket to
// buffer, buffer to batch). Otherwise it works as backendLoop, and answers
// the backend as gorilla's reader would: a ping with a pong, a close with
// the close echoed (the error is then a *websocket.CloseError), a message
// over MaxBackendMessageBytes with close 1009 (websocket.ErrReadLimit), a
// protocol error with close 1002; the end of the stream is a CloseError
// with code 1006, as gorilla has it.
func (s *session) backendFrames(bc *websocket.Conn, c *frameConn) {
	defer s.wg.Done()
	batch := s.cw != nil && !s.cw.deflate
	limit := s.cfg.MaxBackendMessageBytes
	for {
		contain.Point("ws.backend_reader")
		if batch {
			// The commonest case of all: a run of such messages, whole in
			// the buffer, goes to the batch as it came, in one copy.
			if run, k := verbatimRun(c.buffered(), limit, batchBytes-len(s.lb), s.ownPrefix()); k > 0 {
				if !s.dead.Load() && !s.closing.Load() {
					s.takeLB()
					s.lb = append(s.lb, c.buffered()[:run]...)
					s.lbn += k
				}
				c.consume(run)
				continue
			}
		}
		f, err := s.backendFrame(bc, c, false)
		if err == nil && f.n > limit {
			err = backendOverLimit(bc)
		}
		if err != nil {
			s.backendEnded(err)
			return
		}
		if n := int(f.n); batch && f.fin && n <= len(c.buffered()) && maxFrameHeader+n <= batchBytes {
			// The common message: whole in the buffer.
			msg := c.buffered()[:n]
			if f.op == websocket.TextMessage && !utf8.Valid(msg) {
				s.backendEnded(backendInvalidText(bc))
				return
			}
			switch {
			case s.dead.Load() || s.closing.Load():
			case s.ownSent.Load() && answersGateway(msg, s.cfg.tids.prefix):
			default:
				if len(s.lb)+maxFrameHeader+n > batchBytes && !s.flushLB() {
					return
				}
				s.takeLB()
				s.lb = appendHeader(s.lb, int(f.op), n, nil)
				s.lb = append(s.lb, msg...)
				s.lbn++
			}
			c.consume(n)
			continue
		}
		if s.scratch == nil {
			s.scratch = msgBufs.Get().(*[]byte)
		}
		if n := int(f.n); n > 64<<10 && n > cap(*s.scratch) {
			// A large frame: room for it at once, not grown by appends.
			releaseBuf(s.scratch)
			s.scratch = bigMsgBuf(n)
		}
		s.reading = true // the hook must leave scratch alone
		s.setBackendMessageAt(time.Now())
		*s.scratch, err = s.backendMessage(bc, c, f, (*s.scratch)[:0], limit)
		s.setBackendMessageAt(time.Time{})
		s.reading = false
		if err == nil && f.op == websocket.TextMessage && !utf8.Valid(*s.scratch) {
			err = backendInvalidText(bc)
		}
		if err != nil {
			s.backendEnded(err)
			return
		}
		if !s.relayBackend(int(f.op), batch) {
			return
		}
	}
}

// verbatimRun measures the run of frames at the start of b that the
// client can be sent as they are, byte for byte (a backend's frames and
// the gateway's to its client are both a server's: unmasked): whole, each
// a message of its own (text or binary, FIN set, no RSV bit) of at most
// limit bytes, its length in the shortest form (as appendHeader writes
// it), the run at most room bytes, and, when own is not nil (the gateway
// has sent the backend messages of its own, whose TransactionIDs are
// written with own), none the backend's answer to one of them
// (answersGateway: the frame-by-frame path drops it), and none a text
// message that is not valid UTF-8 (the frame-by-frame path refuses it). It returns the
// run's length and its number of frames; 0, 0 when the first frame is not
// such a frame.
func verbatimRun(b []byte, limit int64, room int, own []byte) (n, frames int) {
	for {
		r := b[n:]
		if len(r) < 2 || r[0] != finalBit|websocket.TextMessage && r[0] != finalBit|websocket.BinaryMessage {
			return n, frames
		}
		size, hdr := int(r[1]), 2
		switch {
		case size < 126:
		case size == 126 && len(r) >= 4:
			size, hdr = int(binary.BigEndian.Uint16(r[2:])), 4
			if size < 126 {
				return n, frames // not the shortest form
			}
		default: // masked, a 64-bit length, or the header cut short
			return n, frames
		}
		if int64(size) > limit || hdr+size > len(r) || n+hdr+size > room {
			return n, frames
		}
		if own != nil && answersGateway(r[hdr:hdr+size], own) {
			return n, frames
		}
		if r[0] == finalBit|websocket.TextMessage && !utf8.Valid(r[hdr:hdr+size]) {
			return n, frames // the frame-by-frame path refuses it
		}
		n += hdr + size
		frames++
	}
}

// frame is a frame's header: its opcode, FIN bit, and payload length.
type frame struct {
	op  byte
	fin bool
	n   int64
}

// backendFrame reads frame headers until a data frame's, answering the
// control frames on the way; cont is true within a message (the frame
// must be a continuation), false between messages (it must not).
func (s *session) backendFrame(bc *websocket.Conn, c *frameConn, cont bool) (frame, error) {
	for {
		p, err := c.need(2)
		if err != nil {
			return frame{}, backendReadError(err)
		}
		f := frame{op: p[0] & 0xf, fin: p[0]&finalBit != 0, n: int64(p[1] & 0x7f)}
		var errs []string
		if p[0]&0x40 != 0 {
			errs = append(errs, "RSV1 set")
		}
		if p[0]&0x20 != 0 {
			errs = append(errs, "RSV2 set")
		}
		if p[0]&0x10 != 0 {
			errs = append(errs, "RSV3 set")
		}
		switch int(f.op) {
		case websocket.CloseMessage, websocket.PingMessage, websocket.PongMessage:
			if f.n > 125 {
				errs = append(errs, "len > 125 for control")
			}
			if !f.fin {
				errs = append(errs, "FIN not set on control")
			}
		case websocket.TextMessage, websocket.BinaryMessage:
			if cont {
				errs = append(errs, "data before FIN")
			}
		case 0: // continuation
			if !cont {
				errs = append(errs, "continuation after FIN")
			}
		default:
			errs = append(errs, "bad opcode "+strconv.Itoa(int(f.op)))
		}
		if p[1]&maskBit != 0 {
			errs = append(errs, "bad MASK")
		}
		if len(errs) > 0 {
			return frame{}, backendProtocolError(bc, strings.Join(errs, ", "))
		}
		hdr := 2
		switch f.n {
		case 126:
			if p, err = c.need(4); err != nil {
				return frame{}, backendReadError(err)
			}
			f.n, hdr = int64(binary.BigEndian.Uint16(p[2:])), 4
		case 127:
			if p, err = c.need(10); err != nil {
				return frame{}, backendReadError(err)
			}
			f.n, hdr = int64(binary.BigEndian.Uint64(p[2:])), 10
			if f.n < 0 {
				return frame{}, websocket.ErrReadLimit
			}
		}
		c.consume(hdr)
		if f.op == 0 || f.op == websocket.TextMessage || f.op == websocket.BinaryMessage {
			return f, nil
		}
		if p, err = c.need(int(f.n)); err != nil {
			return frame{}, backendReadError(err)
		}
		payload := string(p)
		c.consume(int(f.n))
		if err := backendControl(bc, f.op, payload); err != nil {
			return frame{}, err
		}
	}
}

// backendMessage appends to dst the payload of the message whose first
// frame is f, frames and all, within limit.
func (s *session) backendMessage(bc *websocket.Conn, c *frameConn, f frame, dst []byte, limit int64) ([]byte, error) {
	total := f.n
	for {
		for n := f.n; n > 0; {
			b := c.buffered()
			if len(b) == 0 {
				if err := c.fill(); err != nil {
					return dst, backendReadError(err)
				}
				continue
			}
			k := int(min(n, int64(len(b))))
			dst = append(dst, b[:k]...)
			c.consume(k)
			n -= int64(k)
		}
		if f.fin {
			return dst, nil
		}
		var err error
		if f, err = s.backendFrame(bc, c, true); err != nil {
			return dst, err
		}
		if total += f.n; total < 0 || total > limit {
			return dst, backendOverLimit(bc)
		}
	}
}

// backendControl answers a control frame's payload as gorilla's default
// handlers do.
func backendControl(bc *websocket.Conn, op byte, payload string) error {
	switch int(op) {
	case websocket.PingMessage:
		err := bc.WriteControl(websocket.PongMessage, []byte(payload), time.Now().Add(time.Second))
		if ne, ok := err.(net.Error); err == nil || err == websocket.ErrCloseSent || ok && ne.Timeout() {
			return nil
		}
		return err
	case websocket.CloseMessage:
		code, text := websocket.CloseNoStatusReceived, ""
		if len(payload) >= 2 {
			code = int(binary.BigEndian.Uint16([]byte(payload[:2])))
			if !validReceivedCloseCode(code) {
				return backendProtocolError(bc, "bad close code "+strconv.Itoa(code))
			}
			text = payload[2:]
			if !utf8.ValidString(text) {
				return backendProtocolError(bc, "invalid utf8 payload in close frame")
			}
		}
		_ = bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
		return &websocket.CloseError{Code: code, Text: text}
	}
	return nil // a pong
}

// backendProtocolError closes the leg with 1002 and msg, as gorilla does.
func backendProtocolError(bc *websocket.Conn, msg string) error {
	data := websocket.FormatCloseMessage(websocket.CloseProtocolError, msg)
	if len(data) > 125 {
		data = data[:125]
	}
	_ = bc.WriteControl(websocket.CloseMessage, data, time.Now().Add(time.Second))
	return errors.New("websocket: " + msg)
}

// backendInvalidText closes the leg with 1007: a text message that is not
// valid UTF-8 (RFC 6455 §8.1) is never passed to the client, whose
// conforming reader would drop the connection without a reason.
func backendInvalidText(bc *websocket.Conn) error {
	_ = bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, "invalid UTF-8"), time.Now().Add(time.Second))
	return errBackendInvalidText
}

// errBackendInvalidText ends a backend leg that sent a text message that
// is not valid UTF-8.
var errBackendInvalidText = errors.New("the backend sent a text message that is not valid UTF-8")

// backendOverLimit closes the leg with 1009, as gorilla does.
func backendOverLimit(bc *websocket.Conn) error {
	_ = bc.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""), time.Now().Add(time.Second))
	return websocket.ErrReadLimit
}

// backendReadError is a read error as gorilla gives it: the stream's end
// is an abnormal closure.
func backendReadError(err error) error {
	if err == io.EOF {
		return &websocket.CloseError{Code: websocket.CloseAbnormalClosure, Text: io.ErrUnexpectedEOF.Error()}
	}
	return err
}
