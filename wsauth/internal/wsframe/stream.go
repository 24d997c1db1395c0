package wsframe

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewStream is the stream of an extended CONNECT (RFC 8441 on HTTP/2, RFC
// 9220 on HTTP/3) as the net.Conn a WebSocket runs on, to hand gorilla's
// Upgrader in place of a hijacked connection: reads come from body, the
// request's, writes go to w, the response, and are flushed at once; remote
// is the peer's address as the request gave it. The first bytes written,
// the Upgrader's HTTP/1.1 101, become the stream's 200 with the
// negotiated sub-protocol and extensions, and nothing of them is sent.
// Close ends the client-to-server direction (body); the stream itself
// ends when the handler returns, which must call EndStream first.
func NewStream(w http.ResponseWriter, body io.ReadCloser, remote string) net.Conn {
	return &streamConn{w: w, rc: http.NewResponseController(w), body: body, remote: remote}
}

// maxHandshakeResponse bounds the Upgrader's 101 answer that a streamConn
// reads before it sends the real 200.
const maxHandshakeResponse = 4096

// streamConn is an extended CONNECT's stream as the net.Conn a WebSocket
// runs on: reads come from the request body, writes go to the response
// and are flushed at once. The first bytes written are the Upgrader's
// HTTP/1.1 101 answer: streamConn turns it into the stream's 200, with
// the negotiated sub-protocol and extensions, and sends nothing of it.
//
// gorilla's Conn reads from one goroutine and serializes its writes (its
// write mutex covers WriteControl too; a Conn over the stream writes under
// its own), so Read and Write need no lock against each other; closeOnce
// guards Close, which any goroutine may call.
//
// The response writer must not be touched once the handler has returned:
// Go's HTTP/2 server clears its state then, and a late SetReadDeadline
// (a close started by a drain just as the session ended) dereferences
// nil. Every call into w and rc holds mu shared; EndStream, which the
// handler calls before it returns, takes it exclusively and marks the
// stream ended, after which those calls fail with net.ErrClosed.
type streamConn struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	body   io.ReadCloser
	remote string

	head      []byte // the 101 so far; nil once the 200 is sent
	sent      bool   // the 200 is sent
	closeOnce sync.Once

	mu      sync.RWMutex // shared by calls into w and rc, exclusive in EndStream
	ended   bool         // EndStream was called: w and rc are not touched
	writing atomic.Int32 // Writes under way
}

// EndStream marks c, a connection NewStream returned, ended: its request
// body is closed (a Read waiting on it returns), a Write under way is
// ended by a write deadline of now and waited for, and every later
// Write or deadline fails with net.ErrClosed. The handler that created the
// stream calls it before it returns. Other connections are left alone.
func EndStream(c net.Conn) {
	sc, ok := c.(*streamConn)
	if !ok {
		return
	}
	_ = sc.Close()
	// A Write blocked on the peer's flow control holds mu shared: a write
	// deadline of now ends it, instead of letting it run to its own
	// deadline while the exclusive lock waits, and every shared call
	// queued behind that lock with it. It resets the stream, so it is set
	// only while a write is under way: a stream whose writes are done ends
	// cleanly, with END_STREAM, when the handler returns.
	sc.mu.RLock()
	if !sc.ended && sc.writing.Load() > 0 {
		_ = sc.rc.SetWriteDeadline(time.Now())
	}
	sc.mu.RUnlock()
	sc.mu.Lock()
	sc.ended = true
	sc.mu.Unlock()
}

// errHandshakeTooLong fails a Write when the Upgrader's answer runs past
// maxHandshakeResponse without its end.
var errHandshakeTooLong = errors.New("wsauth: handshake answer too long")

func (c *streamConn) Read(p []byte) (int, error) { return c.body.Read(p) }

func (c *streamConn) Write(p []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ended {
		return 0, net.ErrClosed
	}
	c.writing.Add(1)
	defer c.writing.Add(-1)
	if c.sent {
		n, err := c.w.Write(p)
		if err == nil {
			err = c.rc.Flush()
		}
		return n, err
	}
	c.head = append(c.head, p...)
	end := bytes.Index(c.head, []byte("\r\n\r\n"))
	if end < 0 {
		if len(c.head) > maxHandshakeResponse {
			return 0, errHandshakeTooLong
		}
		return len(p), nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(c.head[:end+4])), nil)
	if err != nil {
		return 0, err
	}
	rest := c.head[end+4:]
	c.head, c.sent = nil, true
	h := c.w.Header()
	for _, name := range []string{"Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions"} {
		if v := resp.Header.Values(name); len(v) > 0 {
			h[http.CanonicalHeaderKey(name)] = v
		}
	}
	c.w.WriteHeader(http.StatusOK)
	if len(rest) > 0 {
		if _, err := c.w.Write(rest); err != nil {
			return 0, err
		}
	}
	if err := c.rc.Flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the client-to-gateway direction: a Read waiting on the body
// returns. The stream itself ends when the handler returns.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() { _ = c.body.Close() })
	return nil
}

func (c *streamConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *streamConn) SetReadDeadline(t time.Time) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ended {
		return net.ErrClosed
	}
	return c.rc.SetReadDeadline(t)
}

func (c *streamConn) SetWriteDeadline(t time.Time) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ended {
		return net.ErrClosed
	}
	return c.rc.SetWriteDeadline(t)
}

func (c *streamConn) LocalAddr() net.Addr  { return streamAddr("") }
func (c *streamConn) RemoteAddr() net.Addr { return streamAddr(c.remote) }

// streamAddr is the address of a stream's peer, as the request gave it.
type streamAddr string

func (a streamAddr) Network() string { return "stream" }
func (a streamAddr) String() string  { return string(a) }
