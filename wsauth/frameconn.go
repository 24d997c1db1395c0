package wsauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// frameConn is a leg's connection, under gorilla's Conn: the client's (as
// hijacked) or the backend's (as dialed). It lets the session write whole
// data frames of its own, batched into one write(2) (appendFrame, then
// flush), and run hooks before each read from the socket (beforeRead) and
// when the socket has nothing to read, before waiting (idle), where the
// session flushes what it batched for the other leg: a message waits in a
// batch only while its writer has more to read and process.
//
// Gorilla's own writes (the handshake, control frames from any goroutine,
// compressed data frames) come through Write, at once: the batch written
// so far goes first, in the same write(2), so frames keep their order and
// none is left waiting behind a batch. A close frame written marks the
// connection: no data frame is appended after it.
//
// mu serializes writes to the socket (held during the write(2), as
// gorilla's write lock was) and guards the fields below it. A write that
// fails fails every later one.
type frameConn struct {
	net.Conn
	client  bool          // frames are masked: the gateway is the client (the backend leg)
	timeout time.Duration // bounds one flush (Config.WriteTimeout)

	// beforeRead, when set, runs before each read from the socket; idle
	// when the socket has nothing to read, before the reader waits for it
	// (on a TCP socket; else before each read too), and, when eager,
	// before a read that follows a short one. Set once, before the
	// connection's reader starts; called by it only.
	beforeRead func()
	idle       func()

	// The read side, the connection's reader's only. On a TCP socket
	// (rc), reads take up to readChunk bytes at once into a readBufs
	// buffer, held only until its bytes are taken: waiting for data holds
	// none (syscall.RawConn.Read).
	rc         syscall.RawConn
	rbuf       *[]byte // bytes read and not yet taken: (*rbuf)[rpos:rend]; nil with none
	rpos, rend int
	rfn        func(fd uintptr) bool // tryRead, for rc.Read
	rctl       func(fd uintptr)      // tryRead, for rc.Control
	rn         int                   // tryRead's result
	rerr       error                 // likewise
	idled      bool                  // idle has run in this fill
	eager      bool                  // idle runs after a short read, before the next (set once, with idle)
	short      bool                  // the last read did not fill the buffer: the socket is likely dry
	stamp      bool                  // readAt is kept (the client leg: its rate limits read it)
	readAt     time.Time             // when the last read from the socket returned (when stamp)
	handshake  bool                  // the backend's answer to the upgrade is being read (readHandshake)
	hsTail     uint32                // the last four bytes Read gave during it
	hsRead     int                   // the bytes of the answer read so far

	mu        sync.Mutex
	pending   []byte    // whole frames not yet written: *pbuf, or nil
	pbuf      *[]byte   // pending's batchBufs buffer
	wdl       time.Time // gorilla's write deadline, for its Write
	applied   time.Time // the write deadline set on Conn
	hasDl     bool      // applied is set on Conn
	err       error     // a write failed: every later write fails with it
	sniffed   bool      // the server's 101 went through Write (deflate is known)
	deflate   bool      // the client leg negotiated permessage-deflate: data frames are gorilla's
	closeSent bool      // a close frame was written: no data frame may follow

	aborted atomic.Bool // abort was called: writes fail
	writing atomic.Bool // a write to the socket is under way
}

// batchBytes bounds a batch: frames are written once this much is
// pending. A frame larger than it is written alone.
const batchBytes = 64 << 10

// batchBufs are the batches' buffers, held only while frames are pending:
// an idle connection holds none.
var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes+wsframe.MaxHeader); return &b }}

func newFrameConn(c net.Conn, client bool, timeout time.Duration) *frameConn {
	fc := &frameConn{Conn: c, client: client, timeout: timeout}
	if tc, ok := c.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			fc.setRawConn(rc)
		}
	}
	return fc
}

// setRawConn has the connection's reads go through rc: the socket's
// descriptor read with read(2) into readBufs buffers.
func (c *frameConn) setRawConn(rc syscall.RawConn) {
	c.rc, c.rfn = rc, c.tryRead
	c.rctl = func(fd uintptr) { c.tryRead(fd) }
}

// readChunk is the most a frameConn reads from a TCP socket at once.
const readChunk = 32 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// strictPools makes putReadBuf panic on a buffer that is not one of
// readBufs' (nil, or of another size); tests set it. A nil *[]byte put
// into the pool would be handed, later, to any connection's read.
var strictPools bool

// getReadBuf takes a readBufs buffer.
func getReadBuf() *[]byte { return readBufs.Get().(*[]byte) }

// putReadBuf gives b back to readBufs; a nil b, or one of another size, is
// dropped, never pooled.
func putReadBuf(b *[]byte) {
	if b == nil || len(*b) != readChunk {
		if strictPools {
			panic("wsauth: a buffer that is not a read buffer given back to readBufs")
		}
		return
	}
	readBufs.Put(b)
}

// Read gives what an earlier read of the socket left, or else reads the
// socket (fill; without rc, after beforeRead and idle), and notes when
// (readAt). During the backend leg's handshake, readHandshake reads.
func (c *frameConn) Read(p []byte) (int, error) {
	if c.handshake && len(p) > 0 {
		return c.readHandshake(p)
	}
	if c.rend == c.rpos {
		if c.rc == nil || len(p) >= readChunk {
			if c.idle != nil {
				c.idle()
			}
			if c.beforeRead != nil {
				c.beforeRead() // the deadline counts from after idle
			}
			n, err := c.Conn.Read(p)
			if c.stamp {
				c.readAt = time.Now()
			}
			return n, err
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*c.rbuf)[c.rpos:c.rend])
	c.consume(n)
	return n, nil
}

// maxUpgradeAnswer bounds the backend's answer to the upgrade, its status
// line and header: a backend whose header never ends fails the dial once
// it has sent this much, rather than filling gorilla's buffer.
const maxUpgradeAnswer = 8 << 10

// errUpgradeAnswer fails a dial whose answer exceeds maxUpgradeAnswer.
var errUpgradeAnswer = errors.New("the backend's answer to the upgrade exceeds 8 KiB")

// readHandshake is Read while the backend's answer to the upgrade is read
// (handshake): it counts the answer's bytes, failing past
// maxUpgradeAnswer, until the header's end (an empty line) is seen. On a
// TCP socket it gives at most a line at a time, so that gorilla's buffer
// holds nothing past the header once Dial returns: what follows is the
// frame reader's (backendFrames). Over TLS it reads at most what the bound
// leaves; what follows the header goes to gorilla's reader.
func (c *frameConn) readHandshake(p []byte) (int, error) {
	left := maxUpgradeAnswer - c.hsRead
	if left <= 0 {
		return 0, errUpgradeAnswer
	}
	var b []byte
	if c.rc == nil {
		n, err := c.Conn.Read(p[:min(len(p), left)])
		if n == 0 {
			return 0, err
		}
		b = p[:n]
	} else {
		if c.rend == c.rpos {
			if err := c.fill(); err != nil {
				return 0, err
			}
		}
		b = (*c.rbuf)[c.rpos:c.rend]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		b = p[:copy(p, b[:min(len(b), left)])]
		c.consume(len(b))
	}
	for i, x := range b {
		c.hsTail = c.hsTail<<8 | uint32(x)
		if c.hsTail == 0x0d0a0d0a || c.hsTail&0xffff == 0x0a0a {
			c.handshake = false // the header's end
			c.hsRead += i + 1
			return len(b), nil
		}
	}
	c.hsRead += len(b)
	return len(b), nil
}

// buffered is what was read from the TCP socket and not yet taken.
func (c *frameConn) buffered() []byte {
	if c.rbuf == nil {
		return nil
	}
	return (*c.rbuf)[c.rpos:c.rend]
}

// consume takes n buffered bytes (at most as many as are buffered); the
// buffer goes back to the pool once all are taken. consume(0) changes
// nothing, with or without a buffer.
func (c *frameConn) consume(n int) {
	if n <= 0 {
		return
	}
	c.rpos += n
	if c.rpos >= c.rend {
		putReadBuf(c.rbuf)
		c.rbuf, c.rpos, c.rend = nil, 0, 0
	}
}

// need gives the next n buffered bytes (n at most a few hundred), reading
// the socket for more as needed; they stay buffered until consumed.
// need(0) reads nothing and gives an empty slice, with or without a
// buffer (an empty control frame's payload).
func (c *frameConn) need(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	for c.rend-c.rpos < n {
		if err := c.fill(); err != nil {
			return nil, err
		}
	}
	return (*c.rbuf)[c.rpos : c.rpos+n], nil
}

// fill reads the TCP socket once (after beforeRead; readAt notes when it
// returned), adding to what is buffered: into a readBufs buffer taken
// only once the socket is readable when nothing is buffered (an idle
// connection holds none), else after the bytes buffered, moved to the
// buffer's start. When the socket is dry, idle runs, then beforeRead
// again (the read deadline counts from after idle), then the read waits.
// idle runs inside rc.Read, between the read that found the socket dry
// and the wait: bytes that arrive meanwhile wake the wait at once, and no
// read(2) is spent to learn that the socket is still dry (rc.Read forgets
// the socket's readiness when it starts). rc.Read holds the socket, so a
// Close waits for idle to return: whoever closes the connection aborts
// first the one idle writes to (abort). A read deadline that passed
// while idle ran is a timeout only if one more read finds nothing.
//
// On an eager connection (the backend leg), idle runs before the read,
// outside rc.Read (a Close does not wait for it there), and not again in
// this fill, when the last read did not fill the buffer: the socket then
// most likely had no more, and a read(2) to learn so would cost a system
// call and, when the read then waits, a wake-up for the reader and for
// the peer that sends next. The write idle makes (the batch, to the
// client) takes time in which the backend sends more, which the next
// read finds: so a busy stream is relayed as reverse_proxy relays it, a
// read then a write, with no read that finds nothing between them; a
// quiet one costs what it did. Its errors are those of net.Conn.Read.
func (c *frameConn) fill() error {
	if c.beforeRead != nil {
		c.beforeRead()
	}
	if c.rbuf != nil && c.rpos > 0 {
		c.rend = copy(*c.rbuf, (*c.rbuf)[c.rpos:c.rend])
		c.rpos = 0
	}
	c.idled = false
	if c.short && c.idle != nil {
		// The last read took all the socket had: it is likely dry, so
		// idle runs now rather than after a read(2) that would find
		// nothing; the read that follows finds what came meanwhile.
		c.short = false
		c.runIdle()
	}
	err := c.rc.Read(c.rfn)
	if c.idled && errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline passed, perhaps while idle ran: what arrived
		// meanwhile is read, not lost to the timeout.
		c.rn, c.rerr = 0, syscall.EAGAIN
		if c.rc.Control(c.rctl) == nil && c.rerr != syscall.EAGAIN {
			err = nil
		}
	}
	if c.stamp {
		c.readAt = time.Now()
	}
	n, rerr := c.rn, c.rerr
	c.rn, c.rerr = 0, nil
	if err == nil && rerr != nil {
		err = os.NewSyscallError("read", rerr)
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	if err != nil {
		if c.rbuf != nil && c.rend == 0 {
			putReadBuf(c.rbuf)
			c.rbuf = nil
		}
		if err == io.EOF {
			return err
		}
		return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	c.rend += n
	return nil
}

// tryRead is fill's read, for rc.Read: it reads into the buffer, after
// its bytes, taking one when there is none; when nothing is there it
// gives a buffer it took back and, the first time in this fill, runs idle
// and beforeRead; then it has rc.Read wait until the socket is readable.
func (c *frameConn) tryRead(fd uintptr) bool {
	took := c.rbuf == nil
	if took {
		c.rbuf = getReadBuf()
	}
	for {
		c.rn, c.rerr = syscall.Read(int(fd), (*c.rbuf)[c.rend:])
		if c.rerr != syscall.EINTR {
			break
		}
	}
	if c.rerr == syscall.EAGAIN {
		if took {
			putReadBuf(c.rbuf)
			c.rbuf = nil
		}
		if c.idle != nil && !c.idled {
			c.runIdle()
		}
		return false
	}
	if c.rn < 0 {
		c.rn = 0
	}
	c.short = c.eager && c.rend+c.rn < len(*c.rbuf)
	return true
}

// runIdle runs idle, once in this fill, then beforeRead again: the read
// deadline counts from after idle.
func (c *frameConn) runIdle() {
	c.idled = true
	c.idle()
	if c.beforeRead != nil {
		c.beforeRead()
	}
}

// abort fails the connection's writes: one under way returns at once (its
// deadline is moved to the past), later ones fail with errAborted. Safe
// from any goroutine, without c.mu (a writer holds it while it writes). A
// connection's reader may run idle inside its read, where a Close waits
// for it: the session aborts the leg idle writes to before it closes the
// other. The deadline is moved only when a write is under way: on an
// HTTP/2 stream (xconnect) a past deadline resets the stream, which a
// session that ended cleanly must not do.
func (c *frameConn) abort() {
	c.aborted.Store(true)
	if c.writing.Load() {
		_ = c.Conn.SetWriteDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// errAborted fails the writes of an aborted frameConn.
var errAborted = errors.New("connection aborted")

// Write is gorilla's: it writes the pending frames and p now, within the
// deadline gorilla set or, with frames pending, a flush's when later (a
// control frame's short deadline, gorilla's 1 s pong, must not bound a
// batch's write: a timeout fails every later write).
func (c *frameConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.client && !c.sniffed {
		// The server's first write is the Upgrader's 101: it names the
		// extension when it negotiated one.
		c.sniffed = true
		c.deflate = bytes.Contains(p, []byte("\r\nSec-WebSocket-Extensions: permessage-deflate"))
	} else if !c.deflate && len(p) >= 2 && p[0] == wsframe.FinalBit|websocket.CloseMessage {
		// A control frame is one Write, whole; the gateway's data frames
		// are gorilla's only when compressed.
		c.closeSent = true
	}
	b, dl := p, c.wdl
	if len(c.pending) > 0 {
		c.pending = append(c.pending, p...)
		b = c.pending
		if f := c.flushDeadlineLocked(); !dl.IsZero() && f.After(dl) {
			dl = f
		}
	}
	err := c.writeLocked(b, dl)
	c.releaseLocked()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// SetWriteDeadline sets the deadline of gorilla's next Write; the
// session's flushes have their own (timeout).
func (c *frameConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return nil
}

func (c *frameConn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

// CloseWrite shuts the socket's write side, when it has one (linger).
func (c *frameConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// writeLocked writes b within dl. c.mu held.
func (c *frameConn) writeLocked(b []byte, dl time.Time) error {
	if err := c.deadlineLocked(dl); err != nil {
		return err
	}
	_, err := c.Conn.Write(b)
	c.writing.Store(false)
	if err != nil {
		c.err = err
		return err
	}
	return nil
}

// deadlineLocked starts a write (writing), sets the socket's write
// deadline to dl unless it is set already, and fails if the connection was
// aborted: checked after the deadline is set, so that either the check
// sees abort's mark, or abort sees the write under way and its past
// deadline comes after dl. The caller clears writing once the write
// returns. c.mu held.
func (c *frameConn) deadlineLocked(dl time.Time) error {
	c.writing.Store(true)
	if !c.hasDl || !dl.Equal(c.applied) {
		if err := c.Conn.SetWriteDeadline(dl); err != nil {
			c.writing.Store(false)
			c.err = err
			return err
		}
		c.applied, c.hasDl = dl, true
	}
	if c.aborted.Load() {
		c.writing.Store(false)
		c.err = errAborted
		return errAborted
	}
	return nil
}

// flushDeadline is the deadline of a flush starting now: timeout from now,
// or the one already set when it is at most an eighth of timeout earlier
// (a deadline costs a timer update; a flush per message would pay it per
// message).
func (c *frameConn) flushDeadlineLocked() time.Time {
	now := time.Now()
	if c.hasDl && !c.applied.IsZero() && c.applied.Sub(now) >= c.timeout-c.timeout/8 {
		return c.applied
	}
	return now.Add(c.timeout)
}

func (c *frameConn) releaseLocked() {
	if c.pending == nil {
		return
	}
	if cap(c.pending) <= batchBytes+wsframe.MaxHeader {
		*c.pbuf = c.pending[:0]
		batchBufs.Put(c.pbuf)
	}
	c.pending, c.pbuf = nil, nil
}

// appendFrame adds a data frame (typ websocket.TextMessage or
// BinaryMessage) holding data to the batch, writing the batch first when
// the frame would overflow it; a frame larger than a batch is written at
// once. data is copied: the caller may reuse it on return. After a close
// frame it returns websocket.ErrCloseSent.
func (c *frameConn) appendFrame(typ int, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.closeSent {
		return websocket.ErrCloseSent
	}
	n := wsframe.MaxHeader + len(data)
	alone := n > batchBytes // unmasked: not copied; masked: a chunk at a time
	direct := alone && !c.client
	if len(c.pending) > 0 && (alone || len(c.pending)+n > cap(c.pending)) {
		// The batch goes first: a frame written alone must not overtake it.
		if err := c.flushLocked(); err != nil {
			return err
		}
	}
	if direct {
		// Alone, and not copied: the header and data in one writev.
		var hdr [wsframe.MaxHeader]byte
		h := wsframe.AppendHeader(hdr[:0], wsframe.FinalBit|byte(typ), len(data), nil)
		bufs := net.Buffers{h, data}
		if err := c.deadlineLocked(c.flushDeadlineLocked()); err != nil {
			return err
		}
		_, err := bufs.WriteTo(c.Conn)
		c.writing.Store(false)
		if err != nil {
			c.err = err
			return err
		}
		return nil
	}
	if alone {
		return c.writeMaskedLocked(typ, data)
	}
	if c.pending == nil {
		c.pbuf = batchBufs.Get().(*[]byte)
		c.pending = *c.pbuf
	}
	if c.client {
		var key [4]byte
		binary.LittleEndian.PutUint32(key[:], rand.Uint32())
		c.pending = wsframe.AppendHeader(c.pending, wsframe.FinalBit|byte(typ), len(data), key[:])
		c.pending = wsframe.AppendMasked(c.pending, data, key)
	} else {
		c.pending = wsframe.AppendHeader(c.pending, wsframe.FinalBit|byte(typ), len(data), nil)
		c.pending = append(c.pending, data...)
	}
	if len(c.pending) >= batchBytes {
		return c.flushLocked()
	}
	return nil
}

// appendFrames adds b, whole frames, to the batch, writing the batch
// first when b would overflow it. b is held in bp, a batchBufs buffer,
// which the frameConn takes over (it is given back to the pool, or kept as
// the batch's own).
func (c *frameConn) appendFrames(b []byte, bp *[]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	give := func() {
		*bp = b[:0]
		batchBufs.Put(bp)
	}
	if c.err != nil {
		give()
		return c.err
	}
	if c.closeSent {
		give()
		return websocket.ErrCloseSent
	}
	if len(c.pending) > 0 && len(c.pending)+len(b) > cap(c.pending) {
		if err := c.flushLocked(); err != nil {
			give()
			return err
		}
	}
	if len(c.pending) == 0 {
		c.releaseLocked()
		c.pending, c.pbuf = b, bp
	} else {
		c.pending = append(c.pending, b...)
		give()
	}
	if len(c.pending) >= batchBytes {
		return c.flushLocked()
	}
	return nil
}

// writeFrames writes b, whole frames, after the batch so far, at once,
// within timeout. b is held in bp, a batchBufs buffer, which goes back to
// the pool.
func (c *frameConn) writeFrames(b []byte, bp *[]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		*bp = b[:0]
		batchBufs.Put(bp)
	}()
	switch {
	case c.err != nil:
		return c.err
	case c.closeSent:
		return websocket.ErrCloseSent
	case len(c.pending) > 0:
		c.pending = append(c.pending, b...)
		return c.flushLocked()
	}
	return c.writeLocked(b, c.flushDeadlineLocked())
}

// flush writes the batch, within timeout.
func (c *frameConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

func (c *frameConn) flushLocked() error {
	if len(c.pending) == 0 {
		return nil
	}
	err := c.writeLocked(c.pending, c.flushDeadlineLocked())
	c.releaseLocked()
	return err
}

// writeMaskedLocked writes a masked frame larger than a batch (the
// pending batch went first), masking it a batch's room at a time into a
// batchBufs buffer: a masked copy of the whole frame would be garbage of
// its size. c.mu held.
func (c *frameConn) writeMaskedLocked(typ int, data []byte) error {
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	bp := batchBufs.Get().(*[]byte)
	defer func() {
		*bp = (*bp)[:0]
		batchBufs.Put(bp)
	}()
	if err := c.deadlineLocked(c.flushDeadlineLocked()); err != nil {
		return err
	}
	defer c.writing.Store(false)
	b := wsframe.AppendHeader((*bp)[:0], wsframe.FinalBit|byte(typ), len(data), key[:])
	for off := 0; off < len(data); {
		k := min(len(data)-off, batchBytes-len(b))
		// The key goes on where the last chunk left it (RFC 6455 §5.3:
		// byte i of the payload is masked with key[i mod 4]).
		var rk [4]byte
		for j := range rk {
			rk[j] = key[(off+j)&3]
		}
		b = wsframe.AppendMasked(b, data[off:off+k], rk)
		off += k
		if _, err := c.Conn.Write(b); err != nil {
			c.err = err
			return err
		}
		b = b[:0]
	}
	return nil
}

// dialFrameConn dials the backend for gorilla's Dialer (NetDialContext):
// a frameConn over TCP.
func dialFrameConn(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc := newFrameConn(c, true, timeout)
		fc.handshake = true
		noteDialed(ctx, fc)
		return fc, nil
	}
}

// dialedKey is the context key of a dial's *dialed.
type dialedKey struct{}

// dialed is where a dial's frameConn is noted, so that a dial that failed
// can tell why: its answer exceeded maxUpgradeAnswer (gorilla's error then
// names whatever the header's parser made of the answer cut short).
type dialed struct{ fc *frameConn }

func noteDialed(ctx context.Context, fc *frameConn) {
	if d, ok := ctx.Value(dialedKey{}).(*dialed); ok {
		d.fc = fc
	}
}

// dialError is err, the error of a dial that noted d, or errUpgradeAnswer
// when the answer read reached its bound.
func (d *dialed) dialError(err error) error {
	if d.fc != nil && d.fc.hsRead >= maxUpgradeAnswer {
		return fmt.Errorf("%w (%v)", errUpgradeAnswer, err)
	}
	return err
}

// dialTLSFrameConn is dialFrameConn for wss:// (NetDialTLSContext): the
// TLS handshake gorilla would do (system roots, the host as server name),
// under the frameConn.
func dialTLSFrameConn(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, &tls.Config{ServerName: host})
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		fc := newFrameConn(tc, true, timeout)
		fc.handshake = true
		noteDialed(ctx, fc)
		return fc, nil
	}
}

// bufferPool is gorilla's WriteBufferPool: the session frames data
// itself, and gorilla takes a write buffer only to write a data message (a
// compressed one), giving it back after: an idle connection holds none.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() any  { return b.p.Get() }
func (b *bufferPool) Put(v any) { b.p.Put(v) }
