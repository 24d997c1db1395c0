package integration

import (
	"bytes"
	"compress/flate"
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
	for _, f := range r.dataFrames(t) {
		if f.head&0x40 != 0 {
			compressed++
		} else {
			plain++
		}
	}
	return compressed, plain
}

// readFrame is a data frame a client read: its first byte and payload.
type readFrame struct {
	head    byte
	payload []byte
}

// dataFrames are the data frames read after the handshake, up to the
// first one not read whole.
func (r *recordingConn) dataFrames(t *testing.T) []readFrame {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b, ok := bytes.Cut(r.read, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no handshake in what the client read")
	}
	var frames []readFrame
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
		if hdr+n > len(b) {
			break
		}
		if op := head & 0x0f; op == websocket.TextMessage || op == websocket.BinaryMessage {
			frames = append(frames, readFrame{head, b[hdr : hdr+n]})
		}
		b = b[hdr+n:]
	}
	return frames
}

// TestWSBackendCompressionThroughTheDemo: with backend_compression on the
// gateway and compression on the demo backend, the backend leg negotiates
// permessage-deflate and the demo compresses every message (gorilla's
// writer: the standard library's flate at level 1); a client that offers
// permessage-deflate reads the quotes compressed exactly so, byte for
// byte: the gateway passed the backend's compressed messages on, where
// compressing them itself (klauspost's flate at level 3) would give other
// bytes. It failed with the demo's compression left off (the quotes came
// compressed by the gateway).
func TestWSBackendCompressionThroughTheDemo(t *testing.T) {
	t.Parallel()
	config := demoVariant(t, "backend-compression",
		configEdit{anchor: anchorWS, insert: "\t\tbackend_compression\n"},
		configEdit{anchor: "\tgatehouse_demo_backend\n", insert: "\tgatehouse_demo_backend {\n\t\tcompression\n\t}\n", replace: true})
	g := StartGatehouseWith(t, Options{Config: config})
	demo := g.PasswordGrant(t, "demo", "demo")
	rec := &recordingConn{}
	c, _ := authedWS(t, g, &websocket.Dialer{EnableCompression: true, NetDialContext: rec.dial}, demo.AccessToken)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Sub","TransactionID":1}`)); err != nil {
		t.Fatal(err)
	}
	var quotes [][]byte
	_ = c.SetReadDeadline(time.Now().Add(2 * wsTimeout))
	for len(quotes) < 3 {
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if bytes.Contains(raw, []byte(`"Last"`)) {
			quotes = append(quotes, raw)
		}
	}
	passed := 0
	for _, p := range rec.readPayloads(t) {
		for _, q := range quotes {
			if bytes.Equal(p, gorillaDeflate(t, q)) {
				passed++
			}
		}
	}
	if passed < len(quotes) {
		t.Fatalf("%d of the %d quotes came compressed as the demo compressed them", passed, len(quotes))
	}
}

// gorillaDeflate is msg compressed as gorilla's writer compresses a
// message alone: the standard library's flate at level 1, flushed, the
// flush's empty block's tail removed (RFC 7692 §7.2.1).
func gorillaDeflate(t *testing.T, msg []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(msg)
	_ = w.Flush()
	return bytes.TrimSuffix(b.Bytes(), []byte{0, 0, 0xff, 0xff})
}

// readPayloads are the payloads of the compressed data frames read after
// the handshake.
func (r *recordingConn) readPayloads(t *testing.T) [][]byte {
	t.Helper()
	var payloads [][]byte
	for _, f := range r.dataFrames(t) {
		if f.head&0x40 != 0 {
			payloads = append(payloads, f.payload)
		}
	}
	return payloads
}
