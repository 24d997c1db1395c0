package wsframe

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is a leg's connection, under gorilla's Conn: the client's (as
// hijacked, NewServer) or the backend's (as dialed, NewClient). It lets
// the session write whole data frames of its own, batched into one
// write(2) (AppendFrame, then Flush), and run hooks before each read from
// the socket (Hooks.BeforeRead) and when the socket has nothing to read,
// before waiting (Hooks.Idle), where the session flushes what it batched
// for the other leg: a message waits in a batch only while its writer has
// more to read and process.
//
// Gorilla's own writes (the handshake, control frames from any goroutine)
// come through Write, at once: the batch written
// so far goes first, in the same write(2), so frames keep their order and
// none is left waiting behind a batch. A close frame written marks the
// connection: no data frame is appended after it (IsCloseFrame).
//
// mu serializes writes to the socket (held during the write(2), as
// gorilla's write lock was) and guards the fields below it. A write that
// fails fails every later one.
type Conn struct {
	nc      net.Conn
	client  bool          // frames are masked: the gateway is the client (the backend leg)
	timeout time.Duration // bounds one flush (the gateway's WriteTimeout)

	// beforeRead, when set, runs before each read from the socket; idle
	// when the socket has nothing to read, before the reader waits for it
	// (on a TCP socket; else before each read too), and, when eager,
	// before a read that follows a short one. Set once (SetHooks), before
	// the connection's reader starts; called by it only.
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
	applied   time.Time // the write deadline set on nc
	hasDl     bool      // applied is set on nc
	err       error     // a write failed: every later write fails with it
	sniffed   bool      // the server's 101 went through Write (deflate is known)
	deflate   bool      // the client leg negotiated permessage-deflate: data frames may be compressed
	closeSent bool      // a close frame was written: no data frame may follow

	aborted atomic.Bool // Abort was called: writes fail
	writing atomic.Bool // a write to the socket is under way
}

// NewServer is the Conn of a connection the gateway accepted (the client
// leg, hijacked before gorilla's Upgrader writes its 101): its frames are
// unmasked, and the first Write, the 101, tells whether permessage-deflate
// was negotiated (Deflate). timeout bounds each flush of a batch.
func NewServer(nc net.Conn, timeout time.Duration) *Conn {
	return newConn(nc, false, timeout)
}

// NewClient is the Conn of a connection the gateway dialed (the backend
// leg), before gorilla's Dialer writes its upgrade request: its frames are
// masked, and the answer to the upgrade is read a line at a time, at most
// MaxUpgradeAnswer bytes of it. timeout bounds each flush of a batch.
func NewClient(nc net.Conn, timeout time.Duration) *Conn {
	c := newConn(nc, true, timeout)
	c.handshake = true
	return c
}

func newConn(nc net.Conn, client bool, timeout time.Duration) *Conn {
	c := &Conn{nc: nc, client: client, timeout: timeout}
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			c.SetRawConn(rc)
		}
	}
	return c
}

// SetRawConn has the connection's reads go through rc: the socket's
// descriptor read with read(2) into the Conn's pooled buffers. A Conn over
// a *net.TCPConn does so from the start; a test may give another
// descriptor read as a socket is (a non-blocking pipe). Before the first
// read only.
func (c *Conn) SetRawConn(rc syscall.RawConn) {
	c.rc, c.rfn = rc, c.tryRead
	c.rctl = func(fd uintptr) { c.tryRead(fd) }
}

// Hooks are what a Conn's reader runs around its reads from the socket,
// and what it notes of them.
type Hooks struct {
	// BeforeRead, when set, runs before each read from the socket, and
	// again after Idle (a read deadline it sets counts from after Idle).
	BeforeRead func()
	// Idle, when set, runs when the socket has nothing to read, before
	// the reader waits for it (with the Conn's own buffer, on a TCP
	// socket; else before each read), at most once per read (Fill).
	Idle func()
	// Eager has Idle run also before a read that follows a short one
	// (one that did not fill the buffer: the socket is then most likely
	// dry), rather than after a read(2) that finds nothing.
	Eager bool
	// Stamp has the Conn note when each read from the socket returned
	// (ReadAt).
	Stamp bool
}

// SetHooks sets the reader's hooks: once, before the connection's reader
// starts, which alone runs them.
func (c *Conn) SetHooks(h Hooks) {
	c.beforeRead, c.idle, c.eager, c.stamp = h.BeforeRead, h.Idle, h.Eager, h.Stamp
}

// ReadAt is when the last read from the socket returned, when the hooks
// Stamp reads; zero before the first. The connection's reader only.
func (c *Conn) ReadAt() time.Time { return c.readAt }

// Deflate reports whether the connection's client negotiated
// permessage-deflate, as the Upgrader's 101 written through the Conn said
// (NegotiatedDeflate): the session may then compress the data frames it
// writes (AppendFrameDeflated), each message alone. Known once the
// upgrade returned.
func (c *Conn) Deflate() bool { return c.deflate }

// RawReads reports whether the Conn reads the socket into its own buffer
// (a TCP socket) and the answer to the upgrade has been read whole:
// Buffered, Need, Fill and Consume then read the frames after it, none of
// which is in gorilla's reader.
func (c *Conn) RawReads() bool { return c.rc != nil && !c.handshake }

// Writing reports whether a write to the socket is under way. Safe from
// any goroutine.
func (c *Conn) Writing() bool { return c.writing.Load() }

// NetConn is the connection under c (the socket, or the TLS connection or
// stream over it).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Abort fails the connection's writes: one under way returns at once (its
// deadline is moved to the past), later ones fail with errAborted. Safe
// from any goroutine, without c.mu (a writer holds it while it writes). A
// connection's reader may run Idle inside its read, where a Close waits
// for it: a session aborts the leg Idle writes to before it closes the
// other. The deadline is moved only when a write is under way: on an
// HTTP/2 stream (NewStream) a past deadline resets the stream, which a
// session that ended cleanly must not do.
func (c *Conn) Abort() {
	c.aborted.Store(true)
	if c.writing.Load() {
		_ = c.nc.SetWriteDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// errAborted fails the writes of an aborted Conn.
var errAborted = errors.New("connection aborted")

// Write is gorilla's: it writes the pending frames and p now, within the
// deadline gorilla set or, with frames pending, a flush's when later (a
// control frame's short deadline, gorilla's 1 s pong, must not bound a
// batch's write: a timeout fails every later write).
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.client && !c.sniffed {
		// The server's first write is the Upgrader's 101.
		c.sniffed = true
		c.deflate = NegotiatedDeflate(p)
	} else if IsCloseFrame(p) {
		// Gorilla writes no data frame (the session frames its own,
		// compressed or not), so a Write is a control frame, whole.
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
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return nil
}

// SetDeadline sets the read deadline, and gorilla's next Write's.
func (c *Conn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.nc.SetReadDeadline(t)
}

// SetReadDeadline sets the socket's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// CloseWrite shuts the socket's write side, when it has one (linger).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Close closes the connection under c. A read under way that runs Idle
// holds the socket: Close waits for Idle to return (Abort).
func (c *Conn) Close() error { return c.nc.Close() }

// LocalAddr is the connection's local address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr is the connection's peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }
