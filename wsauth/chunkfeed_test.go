package wsauth

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

func init() { wsframe.StrictPools = true }

// chunkFeed is the read side of a test connection whose bytes arrive in
// the chunks the test chose: each read of the socket (a wsframe.Conn's Fill,
// through feedRawConn) finds exactly the next chunk (or its start, when
// the reader's buffer has less room), never two, because a chunk enters
// the pipe only once the reader has found it empty. After the last chunk
// the stream ends (EOF). It is a real non-blocking pipe, read with
// syscall.Read as a TCP socket is.
type chunkFeed struct {
	rfd, wfd int

	mu      sync.Mutex
	chunks  [][]byte
	first   func() []byte // when set, the first chunk, made when the reader first finds the pipe empty
	pending []byte        // the rest of a chunk the pipe had no room for
	eof     bool          // the write end is closed
	closed  bool          // the connection was closed
	reads   int           // chunks delivered
}

func newChunkFeed(chunks [][]byte) (*chunkFeed, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		return nil, err
	}
	return &chunkFeed{rfd: p[0], wfd: p[1], chunks: chunks}, nil
}

// next puts the next chunk (or what is left of one) into the pipe, or
// ends the stream after the last; false once the connection is closed.
func (f *chunkFeed) next() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if len(f.pending) == 0 && f.first != nil {
		f.pending, f.first = f.first(), nil
		f.reads++
	}
	if len(f.pending) == 0 {
		if len(f.chunks) == 0 {
			if !f.eof {
				f.eof = true
				_ = syscall.Close(f.wfd)
			}
			return true
		}
		f.pending, f.chunks = f.chunks[0], f.chunks[1:]
		f.reads++
	}
	n, err := syscall.Write(f.wfd, f.pending)
	if err == nil {
		f.pending = f.pending[n:]
	}
	return true
}

func (f *chunkFeed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	_ = syscall.Close(f.rfd)
	if !f.eof {
		_ = syscall.Close(f.wfd)
	}
}

// feedRawConn is the syscall.RawConn of a chunkFeed: Read runs the
// wsframe.Conn's read function on the pipe, putting the next chunk in
// whenever it finds the pipe empty.
type feedRawConn struct{ f *chunkFeed }

func (r feedRawConn) Control(fn func(fd uintptr)) error {
	if r.isClosed() {
		return net.ErrClosed
	}
	fn(uintptr(r.f.rfd))
	return nil
}

func (r feedRawConn) Read(fn func(fd uintptr) bool) error {
	for {
		if r.isClosed() {
			return net.ErrClosed
		}
		if fn(uintptr(r.f.rfd)) {
			return nil
		}
		if !r.f.next() {
			return net.ErrClosed
		}
	}
}

func (r feedRawConn) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

func (r feedRawConn) isClosed() bool {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.f.closed
}

// feedConn is the net.Conn under a wsframe.Conn read from a chunkFeed: what
// is written to it is kept (written), reads come from the feed only (the
// Conn reads through its RawConn). When handshake is set, the first chunk is
// made, once the upgrade request has been written, of a 101 answering it
// followed by handshake's bytes (the server's first frames, sent with the
// 101).
type feedConn struct {
	f *chunkFeed

	mu      sync.Mutex
	written bytes.Buffer
}

func (c *feedConn) Read([]byte) (int, error) {
	return 0, errors.New("feedConn: read outside the wsframe.Conn's raw reads")
}

func (c *feedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f.isClosed() {
		return 0, net.ErrClosed
	}
	c.written.Write(p)
	return len(p), nil
}

func (c *feedConn) Close() error                     { c.f.close(); return nil }
func (c *feedConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *feedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *feedConn) SetDeadline(time.Time) error      { return nil }
func (c *feedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *feedConn) SetWriteDeadline(time.Time) error { return nil }

func (f *chunkFeed) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// writtenBytes is a copy of what was written to the connection.
func (c *feedConn) writtenBytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.written.Bytes())
}

// newFeedFrameConn is a wsframe.Conn (client: the gateway's backend leg,
// dialed, its answer to the upgrade yet to be read; or server: its client
// leg) reading chunks, as one over TCP reads its socket.
func newFeedFrameConn(chunks [][]byte, client bool) (*wsframe.Conn, *feedConn, error) {
	f, err := newChunkFeed(chunks)
	if err != nil {
		return nil, nil, err
	}
	conn := &feedConn{f: f}
	fc := wsframe.NewServer(conn, 5*time.Second)
	if client {
		fc = wsframe.NewClient(conn, 5*time.Second)
	}
	fc.SetRawConn(feedRawConn{f})
	return fc, conn, nil
}

// accept101 is a server's 101 answering the upgrade request req (bytes
// as written by gorilla's Dialer), with extra header lines (each ending in
// CRLF).
func accept101(req []byte, extra string) []byte {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(req)))
	key := ""
	if err == nil {
		key = r.Header.Get("Sec-WebSocket-Key")
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(h[:]) + "\r\n" + extra + "\r\n")
}
