package wsauth

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// WebSockets over HTTP/2 (RFC 8441) and HTTP/3 (RFC 9220) open with an
// extended CONNECT: method CONNECT, the pseudo-header :protocol websocket,
// Sec-WebSocket-Version 13 and no Sec-WebSocket-Key, Upgrade or
// Connection. The server answers 200 and the request's stream carries the
// WebSocket frames both ways, exactly as the TCP connection does after an
// HTTP/1.1 upgrade.
//
// quic-go's HTTP/3 server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL on
// every connection, so a client that speaks RFC 9220 sends the gateway
// extended CONNECTs; Go's HTTP/2 server advertises it only with
// GODEBUG=http2xconnect=1. The gateway takes both: extendedUpgrade turns
// such a request into the HTTP/1.1 handshake gorilla's Upgrader checks,
// and gives it a stream "connection" in place of a hijacked one, so every
// check before the upgrade and every byte after it take the one path of
// an HTTP/1.1 socket.

// isExtendedConnect reports whether r opens a WebSocket with an extended
// CONNECT. quic-go puts :protocol in r.Proto; Go's HTTP/2 server in the
// header ":protocol".
func isExtendedConnect(r *http.Request) bool {
	if r.Method != http.MethodConnect || r.ProtoMajor < 2 {
		return false
	}
	protocol := r.Header.Get(":protocol")
	if protocol == "" {
		protocol = r.Proto
	}
	return strings.EqualFold(protocol, "websocket")
}

// extendedKey is the Sec-WebSocket-Key of the synthesized handshake. The
// key proves nothing over HTTP/2 and HTTP/3 (RFC 8441 §5 drops it); the
// Upgrader only checks its form, and its answer never reaches the client.
const extendedKey = "R2F0ZWhvdXNlIFJGQyA4NA=="

// extendedUpgrade returns the HTTP/1.1 handshake request that r, an
// extended CONNECT, stands for, and a ResponseWriter whose Hijack hands
// the Upgrader r's stream. Errors before the upgrade are written to w as
// ordinary responses.
func extendedUpgrade(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodGet
	r2.Proto, r2.ProtoMajor, r2.ProtoMinor = "HTTP/1.1", 1, 1
	r2.Header.Del(":protocol")
	r2.Header.Set("Connection", "Upgrade")
	r2.Header.Set("Upgrade", "websocket")
	r2.Header.Set("Sec-WebSocket-Key", extendedKey)
	return &streamResponse{ResponseWriter: w, body: r.Body, remote: r.RemoteAddr}, r2
}

// streamResponse is the ResponseWriter of an extended CONNECT: an
// ordinary one until the Upgrader hijacks it.
type streamResponse struct {
	http.ResponseWriter
	body   io.ReadCloser
	remote string
}

// Hijack returns the stream as a net.Conn. Nothing is buffered: the
// Upgrader requires an empty reader.
func (s *streamResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := &streamConn{w: s.ResponseWriter, rc: http.NewResponseController(s.ResponseWriter), body: s.body, remote: s.remote}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

func (s *streamResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }

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
// write mutex covers WriteControl too), so Read and Write need no lock of
// their own; closeOnce guards Close, which any goroutine may call.
type streamConn struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	body   io.ReadCloser
	remote string

	head      []byte // the 101 so far; nil once the 200 is sent
	sent      bool   // the 200 is sent
	closeOnce sync.Once
}

var errHandshakeTooLong = errors.New("wsauth: handshake answer too long")

func (c *streamConn) Read(p []byte) (int, error) { return c.body.Read(p) }

func (c *streamConn) Write(p []byte) (int, error) {
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

func (c *streamConn) SetReadDeadline(t time.Time) error  { return c.rc.SetReadDeadline(t) }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return c.rc.SetWriteDeadline(t) }

func (c *streamConn) LocalAddr() net.Addr  { return streamAddr("") }
func (c *streamConn) RemoteAddr() net.Addr { return streamAddr(c.remote) }

// streamAddr is the address of a stream's peer, as the request gave it.
type streamAddr string

func (a streamAddr) Network() string { return "stream" }
func (a streamAddr) String() string  { return string(a) }
