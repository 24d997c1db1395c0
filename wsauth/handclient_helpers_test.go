package wsauth

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// handConn is a hand-made WebSocket client on TCP.
type handConn struct {
	net.Conn
	br   *bufio.Reader
	resp *http.Response
}

// handDial opens a TCP connection to the gateway and sends an upgrade with
// the extra header lines (each ending in \r\n); it returns once the
// response head is read, or with resp nil when none came within wait.
func handDial(t testing.TB, e *testEnv, extra string, wait time.Duration) *handConn {
	t.Helper()
	return handDialPath(t, e, "/ws?version=1.1", extra, wait)
}

// handDialPath is handDial with the request target path.
func handDialPath(t testing.TB, e *testEnv, path, extra string, wait time.Duration) *handConn {
	t.Helper()
	c, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "GET " + path + " HTTP/1.1\r\nHost: " + e.srv.Listener.Addr().String() + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + DefaultSubprotocol + "\r\n" + extra + "\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	ac := &handConn{Conn: c, br: bufio.NewReader(c)}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(ac.br, nil)
	_ = c.SetReadDeadline(time.Time{})
	if err == nil {
		ac.resp = resp
	}
	return ac
}

// handFrame is one masked client frame whose first byte is b0 (FIN, RSV
// bits, opcode), its length in the shortest form.
func handFrame(b0 byte, payload []byte) []byte {
	key := [4]byte{0xa1, 0xb2, 0xc3, 0xd4}
	return wsframe.AppendMasked(wsframe.AppendHeader(nil, b0, len(payload), key[:]), payload, key)
}

// handCloseCode reads server frames until a close frame (its code), or -1
// when the stream ends without one, or 0 when wait passes first.
func handCloseCode(c *handConn, wait time.Duration) int {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	for range 10_000 {
		b0, p, err := readFrame(c.br)
		if isTimeout(err) {
			return 0
		}
		if err != nil {
			return -1
		}
		if b0&0xf == websocket.CloseMessage {
			if len(p) < 2 {
				return websocket.CloseNoStatusReceived
			}
			return int(binary.BigEndian.Uint16(p))
		}
	}
	return -1
}

// handDeflate is data compressed as one permessage-deflate frame payload
// (RFC 7692: a sync flush, its empty stored block's tail dropped).
func handDeflate(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = w.Flush()
	return bytes.TrimSuffix(buf.Bytes(), []byte{0, 0, 0xff, 0xff})
}
