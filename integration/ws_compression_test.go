package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWSCompressionThroughTheDemo: a client that offers permessage-deflate,
// as every browser does, subscribed to a quote of the demo market through
// gatehouse, reads the confirmation, the snapshot and the updates as JSON
// (gorilla's client decompressing them), and the quotes, a few hundred
// bytes each, came compressed (RSV1); the short confirmation did not. It
// failed with the gateway framing every message uncompressed (no RSV1 in
// what the client read).
func TestWSCompressionThroughTheDemo(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	demo := g.PasswordGrant(t, "demo", "demo")
	rec := &recordingConn{}
	c, resp := authedWS(t, g, &websocket.Dialer{EnableCompression: true, NetDialContext: rec.dial}, demo.AccessToken)
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
		t.Fatalf("Sec-WebSocket-Extensions %q, want permessage-deflate", ext)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1}`)); err != nil {
		t.Fatal(err)
	}
	quotes := 0
	_ = c.SetReadDeadline(time.Now().Add(2 * wsTimeout))
	for quotes < 3 { // the snapshot and two updates, a tick apart
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var z zenith
		if err := json.Unmarshal(raw, &z); err != nil {
			t.Fatalf("not JSON: %v: %.100q", err, raw)
		}
		if z.Topic == "Security!BHP.ASX" && bytes.Contains(z.Data, []byte(`"Last"`)) {
			quotes++
		}
	}
	compressed, plain := rec.readFrames(t)
	if compressed < 3 || plain < 1 {
		t.Fatalf("the client read %d compressed frames and %d uncompressed, want at least 3 (the quotes) and 1 (the confirmation)", compressed, plain)
	}
}

// readFrames counts the data frames read after the handshake, with RSV1 set
// (compressed) and without.
func (r *recordingConn) readFrames(t *testing.T) (compressed, plain int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b, ok := bytes.Cut(r.read, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no handshake in what the client read")
	}
	for len(b) >= 2 {
		head, n, hdr := b[0], int(b[1]&0x7f), 2
		switch {
		case n == 126 && len(b) >= 4:
			n, hdr = int(b[2])<<8|int(b[3]), 4
		case n == 127 && len(b) >= 10:
			n, hdr = 0, 10
			for _, x := range b[2:10] {
				n = n<<8 | int(x)
			}
		}
		if op := head & 0x0f; op == websocket.TextMessage || op == websocket.BinaryMessage {
			if head&0x40 != 0 {
				compressed++
			} else {
				plain++
			}
		}
		if hdr+n > len(b) {
			break
		}
		b = b[hdr+n:]
	}
	return compressed, plain
}
