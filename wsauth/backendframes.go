package wsauth

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// backendFrames is the backend reader on a TCP backend leg (the leg's
// wsframe.Conn has RawReads): it reads the frames itself from the Conn's
// buffer, not through gorilla's reader, so a message the buffer holds
// whole is framed for the client straight from it, one copy (socket to
// buffer, buffer to batch). Otherwise it works as backendLoop, and answers
// the backend as gorilla's reader would: a ping with a pong, a close with
// the close echoed (the error is then a *websocket.CloseError), a message
// over Backend.MaxMessageBytes with close 1009 (websocket.ErrReadLimit), a
// protocol error with close 1002; the end of the stream is a CloseError
// with code 1006, as gorilla has it.
func (s *session) backendFrames(bc *websocket.Conn, c *wsframe.Conn) {
	defer s.life.wg.Done()
	batch := s.client.wire != nil
	limit := s.g.cfg().Backend.MaxMessageBytes
	for {
		contain.Point("ws.backend_reader")
		if batch {
			// The commonest case of all: a run of such messages, whole in
			// the buffer, goes to the batch as it came, in one copy.
			// The backend's answers to the gateway's own messages, and
			// the messages to compress, stop the run.
			var drop func([]byte) bool
			switch own := s.ownPrefix(); {
			case own != nil:
				drop = func(msg []byte) bool { return !s.back.plain(msg) || answersGateway(msg, own) }
			case s.back.deflate:
				drop = func(msg []byte) bool { return !s.back.plain(msg) }
			}
			if run, k := wsframe.VerbatimRun(c.Buffered(), limit, wsframe.BatchBytes-len(s.back.batch), drop); k > 0 {
				if !s.close.writesEnded() {
					s.back.appendRun(c.Buffered()[:run], k)
				}
				c.Consume(run)
				continue
			}
		}
		f, err := s.backendFrame(bc, c, false)
		if err == nil && f.Len > limit {
			err = backendOverLimit(bc)
		}
		if err != nil {
			s.backendEnded(err)
			return
		}
		if f.Compressed {
			if !s.relayCompressed(bc, c, f, limit, batch) {
				return
			}
			continue
		}
		if n := int(f.Len); batch && f.Fin && n <= len(c.Buffered()) && wsframe.MaxHeader+n <= wsframe.BatchBytes {
			// The common message: whole in the buffer.
			msg := c.Buffered()[:n]
			if f.Op == websocket.TextMessage && !utf8.Valid(msg) {
				s.backendEnded(backendInvalidText(bc))
				return
			}
			switch {
			case s.close.writesEnded():
			case s.subs.ownSent.Load() && answersGateway(msg, s.g.cfg().tids.prefix):
			default:
				if s.back.full(wsframe.MaxHeader+n) && !s.flushBatch() {
					return
				}
				s.back.frame(f.Op, msg)
			}
			c.Consume(n)
			continue
		}
		if s.back.scratch == nil {
			s.back.scratch = msgBufs.Get().(*[]byte)
		}
		if n := int(f.Len); n > 64<<10 && n > cap(*s.back.scratch) {
			// A large frame: room for it at once, not grown by appends.
			releaseBuf(s.back.scratch)
			s.back.scratch = bigMsgBuf(n)
		}
		s.back.reading = true // the hook must leave scratch alone
		s.setBackendMessageAt(time.Now())
		*s.back.scratch, err = s.backendMessage(bc, c, f, (*s.back.scratch)[:0], limit)
		s.setBackendMessageAt(time.Time{})
		s.back.reading = false
		if err == nil && f.Op == websocket.TextMessage && !utf8.Valid(*s.back.scratch) {
			err = backendInvalidText(bc)
		}
		if err != nil {
			s.backendEnded(err)
			return
		}
		if !s.relayBackend(int(f.Op), batch) {
			return
		}
	}
}

// backendFrame reads frame headers until a data frame's, answering the
// control frames on the way; cont is true within a message (the frame
// must be a continuation), false between messages (it must not).
func (s *session) backendFrame(bc *websocket.Conn, c *wsframe.Conn, cont bool) (wsframe.Header, error) {
	for {
		p, err := c.Need(2)
		if err != nil {
			return wsframe.Header{}, backendReadError(err)
		}
		parse := wsframe.ParseHeader
		if s.back.leg.on {
			parse = wsframe.ParseDeflateHeader // RSV1: a compressed message (passthrough.go)
		}
		f, size, err := parse(p, cont)
		if err == nil && size > len(p) {
			if p, err = c.Need(size); err != nil {
				return wsframe.Header{}, backendReadError(err)
			}
			f, size, err = parse(p, cont)
		}
		if pe, ok := errors.AsType[wsframe.ProtocolError](err); ok {
			return wsframe.Header{}, backendProtocolError(bc, string(pe))
		}
		if err != nil {
			return wsframe.Header{}, err
		}
		c.Consume(size)
		if f.IsData() {
			return f, nil
		}
		if p, err = c.Need(int(f.Len)); err != nil {
			return wsframe.Header{}, backendReadError(err)
		}
		payload := string(p)
		c.Consume(int(f.Len))
		if err := backendControl(bc, f.Op, payload); err != nil {
			return wsframe.Header{}, err
		}
	}
}

// backendMessage appends to dst the payload of the message whose first
// frame is f, frames and all, within limit.
func (s *session) backendMessage(bc *websocket.Conn, c *wsframe.Conn, f wsframe.Header, dst []byte, limit int64) ([]byte, error) {
	total := f.Len
	for {
		for n := f.Len; n > 0; {
			b := c.Buffered()
			if len(b) == 0 {
				if err := c.Fill(); err != nil {
					return dst, backendReadError(err)
				}
				continue
			}
			k := int(min(n, int64(len(b))))
			dst = append(dst, b[:k]...)
			c.Consume(k)
			n -= int64(k)
		}
		if f.Fin {
			return dst, nil
		}
		var err error
		if f, err = s.backendFrame(bc, c, true); err != nil {
			return dst, err
		}
		if total += f.Len; total < 0 || total > limit {
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
