package wsauth

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
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
// and gives it a stream "connection" (wsframe.NewStream) in place of a
// hijacked one, so every check before the upgrade and every byte after it
// take the one path of an HTTP/1.1 socket.

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
func extendedUpgrade(w http.ResponseWriter, r *http.Request) (*streamResponse, *http.Request) {
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
	conn   net.Conn // the stream Hijack returned, nil before
}

// Hijack returns the stream as a net.Conn. Nothing is buffered: the
// Upgrader requires an empty reader.
func (s *streamResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c := wsframe.NewStream(s.ResponseWriter, s.body, s.remote)
	s.conn = c
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// end ends the stream (wsframe.EndStream), if there is one, before the
// handler returns: a close that a drain or the supervisor starts on a
// session that has just ended then fails as on a closed connection,
// instead of touching a response the server has released.
func (s *streamResponse) end() {
	if s.conn != nil {
		wsframe.EndStream(s.conn)
	}
}

func (s *streamResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }
