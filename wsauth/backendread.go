package wsauth

import (
	"errors"
	"net"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/internal/contain"
	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// backendReader is the backend reader's state. The backend reader is the
// goroutine that reads the backend leg (backendLoop, or backendFrames on a
// TCP leg), with the leg's hooks, which run on it (extendBackend,
// backendIdle): it frames the backend's messages into a batch of its own
// (batch), and when the backend socket has nothing more to read queues the
// batch (handOff) and writes the queue to the client itself (drain). It
// alone touches this state; conn is set before it starts.
type backendReader struct {
	conn    net.Conn  // the backend leg's connection, for its read deadline
	readBy  time.Time // the read deadline extendBackend set last
	msgAt   time.Time // when the message it reads began; zero between messages
	scratch *[]byte   // the message it reads, a msgBufs buffer
	reading bool      // reading a message into scratch

	batch     []byte  // messages framed for the client, not yet queued
	batchBuf  *[]byte // batch's buffer (wsframe.GetBatch)
	batchMsgs int     // the messages in batch

	deflate bool         // the client negotiated permessage-deflate (set before the reader starts)
	z       compressRule // which messages it compresses (compress.go)

	leg      legDeflate // what the backend leg negotiated of permessage-deflate (set before the reader starts)
	zscratch *[]byte    // a compressed message read in frames, a msgBufs buffer (passthrough.go)
}

// full reports whether n more bytes would take a batch that holds
// messages past wsframe.BatchBytes.
func (b *backendReader) full(n int) bool {
	return len(b.batch) > 0 && len(b.batch)+n > wsframe.BatchBytes
}

// appendRun appends run, k frames as the backend sent them
// (wsframe.VerbatimRun), to the batch.
func (b *backendReader) appendRun(run []byte, k int) {
	b.grow()
	b.batch = append(b.batch, run...)
	b.batchMsgs += k
}

// grow gives the batch a buffer when it has none.
func (b *backendReader) grow() {
	if b.batch == nil {
		b.batchBuf = wsframe.GetBatch()
		b.batch = (*b.batchBuf)[:0]
	}
}

// takeBatch takes the batch, its buffer and its count of messages, and
// leaves the reader none.
func (b *backendReader) takeBatch() (frames []byte, buf *[]byte, msgs int) {
	frames, buf, msgs = b.batch, b.batchBuf, b.batchMsgs
	b.batch, b.batchBuf, b.batchMsgs = nil, nil, 0
	return frames, buf, msgs
}

// releaseScratch gives back the message buffers between messages, so an
// idle session holds none.
func (b *backendReader) releaseScratch() {
	if b.reading {
		return
	}
	releaseBuf(b.scratch)
	releaseBuf(b.zscratch)
	b.scratch, b.zscratch = nil, nil
}

// backendLoop is the backend reader: it reads each backend message whole
// (the one copy, from the socket into its buffer; never JSON-parsed) and
// queues it for the client, but for the backend's answers to the
// gateway's own messages, found by their reserved TransactionID
// (answersGateway), which it drops. Until the gateway has sent the backend
// a message of its own (ownSent) there is no such answer, and the search
// is skipped. It writes what it queued to the client itself, batched,
// when the backend socket has nothing more to read (backendIdle, the
// backend leg's idle) or a batch is full: a message waits only while the
// reader has more to read, and no other goroutine is woken per message. It waits on the
// client only for that write, or while this client's queue is full and
// another goroutine writes it, WriteTimeout at most, after which the
// client is closed as not reading (put, clientWriteFailed). When the
// backend leg ends it queues the matching close behind the messages
// already queued.
func (s *session) backendLoop(bc *websocket.Conn) {
	defer s.life.wg.Done()
	limit := s.g.cfg().Backend.MaxMessageBytes
	// gorilla's limit bounds the frames' payloads; AppendAll's, a message
	// as gorilla decompressed it.
	bc.SetReadLimit(limit)
	batch := s.client.wire != nil // else gorilla frames each message
	for {
		typ, r, err := bc.NextReader()
		if err != nil {
			s.backendEnded(err)
			return
		}
		if s.back.scratch == nil {
			s.back.scratch = msgBufs.Get().(*[]byte)
		}
		s.back.reading = true // the hook must leave scratch alone
		s.setBackendMessageAt(time.Now())
		*s.back.scratch, err = wsframe.AppendAll((*s.back.scratch)[:0], r, limit)
		if err == wsframe.ErrOverLimit {
			err = backendOverLimit(bc) // a compressed message, decompressed past the bound
		}
		s.setBackendMessageAt(time.Time{})
		s.back.reading = false
		if err == nil && typ == websocket.TextMessage && !utf8.Valid(*s.back.scratch) {
			err = backendInvalidText(bc)
		}
		if err != nil {
			s.backendEnded(err)
			return
		}
		contain.Point("ws.backend_reader")
		if !s.relayBackend(typ, batch) {
			return
		}
	}
}

// relayBackend passes on the backend message in scratch: it drops it when
// it answers the gateway, or when nothing more is written to the client;
// frames it into the reader's batch when batch (the client's frames
// are the gateway's own); or else queues it. false when the session is
// done. Backend reader only.
func (s *session) relayBackend(typ int, batch bool) bool {
	bp := s.back.scratch
	msg := *bp
	if s.subs.ownSent.Load() && answersGateway(msg, s.g.cfg().tids.prefix) {
		return true // the backend's answer to the gateway's own message
	}
	if batch {
		if s.close.writesEnded() {
			return true
		}
		n := wsframe.MaxHeader + len(msg)
		if s.back.full(n) && !s.flushBatch() {
			return false
		}
		if n <= wsframe.BatchBytes {
			s.back.frame(byte(typ), msg)
			return true
		}
	}
	s.back.scratch = nil // the queue has it
	return s.put(outMsg{typ: typ, data: msg, buf: bp, backend: true}, fromBackendReader)
}

// handOff queues the backend reader's batch, its messages framed, as
// one entry: drain writes it whole, usually at once, the reader being the
// flusher. So a message costs the queue nothing. Backend reader only.
func (s *session) handOff() bool {
	if len(s.back.batch) == 0 {
		return true
	}
	frames, buf, n := s.back.takeBatch()
	return s.put(outMsg{data: frames, buf: buf, framed: n}, fromBackendReader)
}

// backendIdle runs when the backend socket has nothing to read, before
// the reader waits (the backend leg's idle): it queues the reader's batch
// (handOff) and writes the queue to the client (drain); between messages
// the reader gives back its message buffer, so an idle session holds
// none. Backend reader only.
func (s *session) backendIdle() {
	s.back.releaseScratch()
	if len(s.back.batch) > 0 && s.writeBatch() {
		return
	}
	s.handOff()
	s.drain()
}

// writeBatch is handOff and drain's short cut when the queue is empty and
// nobody is writing it, as it is most of the time: the reader, flusher,
// writes its batch at once, without queueing it. false when it could
// not. Backend reader only.
func (s *session) writeBatch() bool {
	if !s.out.StartFlushEmpty() {
		return false
	}
	frames, buf, n := s.back.takeBatch()
	if err := s.client.wire.WriteFrames(frames, buf); err != nil {
		s.clientWriteFailed(err)
	} else {
		s.g.cfg().Hooks.Metrics.Delivered(n)
	}
	if !s.out.EndFlush() {
		s.flush() // queued meanwhile
	}
	return true
}

// flushBatch queues the reader's batch, full, and writes the queue (the
// reader does not wait for its socket to run dry when there is a batch's
// worth). false when the session is done. Backend reader only.
func (s *session) flushBatch() bool {
	if !s.handOff() {
		return false
	}
	s.drain()
	return true
}

// extendBackend sets the backend leg's read deadline: IdleTimeout from now
// (it runs before each read from the backend's socket, and again after
// the idle hook; the gateway's pings keep a live backend talking), and no
// later than Backend.MessageTimeout after the message being read began. As
// extend, it skips a deadline later than the one set by less than
// IdleTimeout/64. Backend reader only.
func (s *session) extendBackend() {
	b := &s.back
	if b.conn == nil {
		return
	}
	d := time.Now().Add(s.g.cfg().Transport.IdleTimeout)
	if !b.msgAt.IsZero() {
		if m := b.msgAt.Add(s.g.cfg().Backend.MessageTimeout); m.Before(d) {
			d = m
		}
	}
	if ahead := d.Sub(b.readBy); ahead >= 0 && ahead < s.g.cfg().Transport.IdleTimeout/64 {
		return
	}
	b.readBy = d
	_ = b.conn.SetReadDeadline(d)
}

// setBackendMessageAt notes when the backend message being read began
// (zero: it has been read) and sets the read deadline accordingly.
// Backend reader only.
func (s *session) setBackendMessageAt(t time.Time) {
	s.back.msgAt = t
	s.extendBackend()
}

// msgBufs are the backend messages' buffers: each is read into once (the
// one copy), written to the client, and reused; one grown past 64 KiB
// goes to bigMsgBufs.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// bigMsgBufs are the buffers of backend messages larger than 64 KiB,
// reused (bigMsgBuf) so that a backend sending large messages does not
// make one message of garbage each.
var bigMsgBufs sync.Pool

// bigMsgBuf is a buffer with room for n bytes: a reused one when the
// pool has one large enough, else a new one of n. A pooled buffer too
// small is dropped, so that the new one takes its place: put back, it
// would be found first again, and each message of n bytes would allocate
// anew.
func bigMsgBuf(n int) *[]byte {
	if bp, ok := bigMsgBufs.Get().(*[]byte); ok && cap(*bp) >= n {
		return bp
	}
	b := make([]byte, 0, n)
	return &b
}

// releaseBuf returns a message's buffer to msgBufs, or bigMsgBufs when it
// grew past 64 KiB: the client leg's flusher (drain) once the message is
// copied into its batch or written, or the backend reader its scratch
// buffer. Nothing holds a reference after.
func releaseBuf(bp *[]byte) {
	if bp == nil {
		return
	}
	*bp = (*bp)[:0]
	if cap(*bp) > 64<<10 {
		bigMsgBufs.Put(bp)
		return
	}
	msgBufs.Put(bp)
}

// backendEnded maps the backend leg's end to the client's close code: the
// backend's own code when it sent one the client may receive (1000 for a
// close without one), else 1011.
func (s *session) backendEnded(err error) {
	if s.close.ending.Load() || s.close.closing.Load() {
		return
	}
	code := websocket.CloseInternalServerErr
	if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
		code = clientCloseCode(ce.Code)
		s.g.log().Info("ws backend closed", zap.Int("code", ce.Code), zap.String("user", s.auth.subject()))
	} else {
		s.g.log().Warn("ws backend leg failed", zap.String("user", s.auth.subject()), zap.Error(err))
	}
	s.handOff() // the messages read before the end go first
	if !s.put(outMsg{close: code}, fromOther) {
		s.closeClient(code)
	}
}
