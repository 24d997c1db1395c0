package wshandler

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// dialExtended opens a WebSocket with an extended CONNECT over rt (RFC
// 9220 over HTTP/3 when h3, RFC 8441 over HTTP/2 otherwise) and returns
// gorilla's client Conn on the request's stream. gorilla speaks only the
// HTTP/1.1 handshake, so the stream is given to its Dialer as a net.Conn
// (extendedClientConn) that turns the handshake GET it writes into the
// CONNECT and the CONNECT's 200 into the 101 it reads. On a refusal the
// response carries the server's status.
func dialExtended(ctx context.Context, rt http.RoundTripper, h3 bool, rawURL string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	conn := &extendedClientConn{ctx: ctx, rt: rt, h3: h3, url: rawURL}
	d := websocket.Dialer{
		NetDialContext:    func(context.Context, string, string) (net.Conn, error) { return conn, nil },
		Subprotocols:      []string{"ServiceJson"},
		EnableCompression: true,
		HandshakeTimeout:  10 * time.Second,
	}
	wsURL := "ws" + strings.TrimPrefix(rawURL, "https")
	c, resp, err := d.DialContext(ctx, wsURL, hdr)
	if resp != nil && conn.resp != nil {
		resp.Header = conn.resp.Header // the server's, not the synthesized 101's
	}
	return c, resp, err
}

// extendedClientConn is the client side of an extended CONNECT as a
// net.Conn for gorilla's Dialer.
type extendedClientConn struct {
	ctx context.Context
	rt  http.RoundTripper
	h3  bool
	url string

	mu   sync.Mutex
	head []byte    // the handshake GET so far
	in   io.Reader // the synthesized answer, then the response body
	pw   *io.PipeWriter
	resp *http.Response
}

func (c *extendedClientConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pw != nil {
		return c.pw.Write(p)
	}
	c.head = append(c.head, p...)
	if !bytes.Contains(c.head, []byte("\r\n\r\n")) {
		return len(p), nil
	}
	get, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(c.head)))
	if err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(c.ctx, http.MethodConnect, c.url, pr)
	for name, v := range get.Header {
		switch http.CanonicalHeaderKey(name) {
		case "Connection", "Upgrade", "Sec-Websocket-Key", "Host":
		default:
			req.Header[name] = v
		}
	}
	if c.h3 {
		req.Proto = "websocket"
	} else {
		req.Header.Set(":protocol", "websocket")
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	c.resp, c.pw = resp, pw
	var answer strings.Builder
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(&answer, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n%s", resp.StatusCode, http.StatusText(resp.StatusCode), len(body), body)
	} else {
		sum := sha1.Sum([]byte(get.Header.Get("Sec-Websocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(&answer, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
			base64.StdEncoding.EncodeToString(sum[:]))
		for _, name := range []string{"Sec-Websocket-Protocol", "Sec-Websocket-Extensions"} {
			if v := resp.Header.Get(name); v != "" {
				fmt.Fprintf(&answer, "%s: %s\r\n", name, v)
			}
		}
		answer.WriteString("\r\n")
	}
	c.in = io.MultiReader(strings.NewReader(answer.String()), resp.Body)
	return len(p), nil
}

func (c *extendedClientConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	in := c.in
	c.mu.Unlock()
	if in == nil {
		return 0, io.ErrUnexpectedEOF
	}
	return in.Read(p)
}

func (c *extendedClientConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pw != nil {
		c.pw.Close()
		c.resp.Body.Close()
	}
	return nil
}

func (c *extendedClientConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *extendedClientConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *extendedClientConn) SetDeadline(t time.Time) error      { return nil }
func (c *extendedClientConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *extendedClientConn) SetWriteDeadline(t time.Time) error { return nil }
