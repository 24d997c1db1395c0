package wsframe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// readChunk is the most a Conn reads from a TCP socket at once.
const readChunk = 32 << 10

var readBufs = sync.Pool{New: func() any { b := make([]byte, readChunk); return &b }}

// StrictPools makes the Conn panic when it gives back to its pool of read
// buffers one that is not one of them (nil, or of another size), which it
// otherwise drops; tests set it, before any Conn reads. A nil *[]byte put
// into the pool would be handed, later, to any connection's read.
var StrictPools bool

// getReadBuf takes a readBufs buffer.
func getReadBuf() *[]byte { return readBufs.Get().(*[]byte) }

// putReadBuf gives b back to readBufs; a nil b, or one of another size, is
// dropped, never pooled.
func putReadBuf(b *[]byte) {
	if b == nil || len(*b) != readChunk {
		if StrictPools {
			panic("wsframe: a buffer that is not a read buffer given back to readBufs")
		}
		return
	}
	readBufs.Put(b)
}

// Read gives what an earlier read of the socket left, or else reads the
// socket (Fill; without rc, after beforeRead and idle), and notes when
// (readAt). While a client's Conn reads the answer to its upgrade
// (NewClient), readHandshake reads.
func (c *Conn) Read(p []byte) (int, error) {
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
			n, err := c.nc.Read(p)
			if c.stamp {
				c.readAt = time.Now()
			}
			return n, err
		}
		if err := c.Fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*c.rbuf)[c.rpos:c.rend])
	c.Consume(n)
	return n, nil
}

// MaxUpgradeAnswer bounds the backend's answer to the upgrade, its status
// line and header: a backend whose header never ends fails the dial once
// it has sent this much, rather than filling gorilla's buffer.
const MaxUpgradeAnswer = 8 << 10

// ErrUpgradeAnswer fails a dial whose answer exceeds MaxUpgradeAnswer.
var ErrUpgradeAnswer = errors.New("the backend's answer to the upgrade exceeds 8 KiB")

// readHandshake is Read while the backend's answer to the upgrade is read
// (handshake): it counts the answer's bytes, failing past
// MaxUpgradeAnswer, until the header's end (an empty line) is seen. On a
// TCP socket it gives at most a line at a time, so that gorilla's buffer
// holds nothing past the header once Dial returns: what follows is the
// caller's frame reader's (RawReads, Buffered). Over TLS it reads at most
// what the bound leaves; what follows the header goes to gorilla's reader.
func (c *Conn) readHandshake(p []byte) (int, error) {
	left := MaxUpgradeAnswer - c.hsRead
	if left <= 0 {
		return 0, ErrUpgradeAnswer
	}
	var b []byte
	if c.rc == nil {
		n, err := c.nc.Read(p[:min(len(p), left)])
		if n == 0 {
			return 0, err
		}
		b = p[:n]
	} else {
		if c.rend == c.rpos {
			if err := c.Fill(); err != nil {
				return 0, err
			}
		}
		b = (*c.rbuf)[c.rpos:c.rend]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		b = p[:copy(p, b[:min(len(b), left)])]
		c.Consume(len(b))
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

// Buffered is what was read from the TCP socket and not yet taken
// (Consume). The connection's reader only, as are Consume, Need and Fill.
func (c *Conn) Buffered() []byte {
	if c.rbuf == nil {
		return nil
	}
	return (*c.rbuf)[c.rpos:c.rend]
}

// Consume takes n Buffered bytes (at most as many as are Buffered); the
// buffer goes back to the pool once all are taken. Consume(0) changes
// nothing, with or without a buffer.
func (c *Conn) Consume(n int) {
	if n <= 0 {
		return
	}
	c.rpos += n
	if c.rpos >= c.rend {
		putReadBuf(c.rbuf)
		c.rbuf, c.rpos, c.rend = nil, 0, 0
	}
}

// Need gives the next n Buffered bytes (n at most a few hundred), reading
// the socket for more as needed; they stay Buffered until consumed.
// Need(0) reads nothing and gives an empty slice, with or without a
// buffer (an empty control frame's payload).
func (c *Conn) Need(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	for c.rend-c.rpos < n {
		if err := c.Fill(); err != nil {
			return nil, err
		}
	}
	return (*c.rbuf)[c.rpos : c.rpos+n], nil
}

// Fill reads the TCP socket once (after beforeRead; readAt notes when it
// returned), adding to what is Buffered: into a readBufs buffer taken
// only once the socket is readable when nothing is Buffered (an idle
// connection holds none), else after the bytes Buffered, moved to the
// buffer's start. When the socket is dry, idle runs, then beforeRead
// again (the read deadline counts from after idle), then the read waits.
// idle runs inside rc.Read, between the read that found the socket dry
// and the wait: bytes that arrive meanwhile wake the wait at once, and no
// read(2) is spent to learn that the socket is still dry (rc.Read forgets
// the socket's readiness when it starts). rc.Read holds the socket, so a
// Close waits for idle to return: whoever closes the connection aborts
// first the one idle writes to (Abort). A read deadline that passed
// while idle ran is a timeout only if one more read finds nothing.
//
// On an eager connection (Hooks.Eager: the backend leg), idle runs
// before the read, outside rc.Read (a Close does not wait for it there),
// and not again in this Fill, when the last read did not fill the buffer:
// the socket then most likely had no more, and a read(2) to learn so
// would cost a system call and, when the read then waits, a wake-up for
// the reader and for the peer that sends next. The write idle makes (the
// batch, to the client) takes time in which the backend sends more, which
// the next read finds: so a busy stream is relayed as reverse_proxy
// relays it, a read then a write, with no read that finds nothing between
// them; a quiet one costs what it did. Its errors are those of
// net.Conn.Read.
func (c *Conn) Fill() error {
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

// tryRead is Fill's read, for rc.Read: it reads into the buffer, after
// its bytes, taking one when there is none; when nothing is there it
// gives a buffer it took back and, the first time in this Fill, runs idle
// and beforeRead; then it has rc.Read wait until the socket is readable.
func (c *Conn) tryRead(fd uintptr) bool {
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

// runIdle runs idle, once in this Fill, then beforeRead again: the read
// deadline counts from after idle.
func (c *Conn) runIdle() {
	c.idled = true
	c.idle()
	if c.beforeRead != nil {
		c.beforeRead()
	}
}
