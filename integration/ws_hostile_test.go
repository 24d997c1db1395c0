package integration

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// authedWS opens /ws with demo's token in the Authorization header (dialer
// d, or a default one when nil).
func authedWS(t *testing.T, g *Gatehouse, d *websocket.Dialer, token string) (*websocket.Conn, *http.Response) {
	t.Helper()
	if d == nil {
		d = &websocket.Dialer{}
	}
	d.HandshakeTimeout = wsTimeout
	d.Subprotocols = []string{"ServiceJson"}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	c, resp, err := d.Dial("ws://127.0.0.1:"+strconv.Itoa(g.Port)+"/ws?version=1.1", h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return c, resp
}

// readClose reads from c until the connection ends, within wsTimeout, and
// returns the close code the server sent (or fails the test when it ended
// without a close frame).
func readClose(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wsTimeout))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
			if ce.Text != "" {
				t.Errorf("close %d carries detail %q", ce.Code, ce.Text)
			}
			return ce.Code
		}
		t.Fatalf("the connection ended without a close frame: %v", err)
	}
}

// readOne reads the next message within wsTimeout.
func readOne(t *testing.T, c *websocket.Conn) zenith {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wsTimeout))
	_, raw, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("waiting for a message: %v", err)
	}
	var z zenith
	if err := json.Unmarshal(raw, &z); err != nil {
		t.Fatalf("not a Zenith message: %s", raw)
	}
	return z
}

// serverInfoAnswered checks that the socket still relays: an allowed
// message is answered by the backend.
func serverInfoAnswered(t *testing.T, c *websocket.Conn, txid int) {
	t.Helper()
	msg := `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":` + strconv.Itoa(txid) + `}`
	if z := exchange(t, c, msg, txid); z.Action == "Error" || z.Topic != "ServerInfo" {
		t.Fatalf("ServerInfo after the hostile message: %+v %s", z, z.Data)
	}
}

// TestWSHostileFrames sends hostile frames on an authenticated socket of
// the demo's /ws through the real binary: each malformed message is
// answered by the gateway with Error Data.Deserialise and never reaches the
// backend (the next allowed message is answered normally, in order); the
// frames that break the protocol close the socket with the code RFC 6455
// gives them.
func TestWSHostileFrames(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	demo := g.PasswordGrant(t, "demo", "demo")

	t.Run("malformed messages", func(t *testing.T) {
		c, _ := authedWS(t, g, nil, demo.AccessToken)
		cases := []struct{ name, msg string }{
			{"invalid JSON", `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":101`},
			{"controller in another case", `{"controller":"Zenith","Topic":"ServerInfo","TransactionID":102}`},
			{"TOPIC in another case", `{"Controller":"Zenith","TOPIC":"ServerInfo","TransactionID":103}`},
			{"escaped envelope name", `{"Contr\u006fller":"Zenith","Topic":"ServerInfo","TransactionID":104}`},
			{"escaped duplicate of Controller", `{"Controller":"Zenith","Contr\u006fller":"Trading","Topic":"ServerInfo","TransactionID":105}`},
			{"non-ASCII top-level name", `{"Controller":"Zenith","Topic":"ServerInfo","TranſactionID":106}`},
			{"duplicate Topic", `{"Controller":"Zenith","Topic":"ServerInfo","Topic":"QueryAccounts","TransactionID":107}`},
			{"duplicate Controller", `{"Controller":"Zenith","Controller":"Trading","Topic":"QueryAccounts","TransactionID":108}`},
			{"trailing bytes", `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":109} {"Controller":"Trading"}`},
			{"trailing garbage", `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":110}x`},
			{"not an object", `["Zenith","ServerInfo"]`},
		}
		for i, tc := range cases {
			if err := c.WriteMessage(websocket.TextMessage, []byte(tc.msg)); err != nil {
				t.Fatalf("%s: send: %v", tc.name, err)
			}
			z := readOne(t, c)
			if z.Action != "Error" || string(z.Data) != `"Data.Deserialise"` {
				t.Errorf("%s: got %+v %s, want Error Data.Deserialise", tc.name, z, z.Data)
			}
			// The answer to the next allowed message comes next: the
			// backend got nothing in between (it would have answered).
			serverInfoAnswered(t, c, 1000+i)
		}
	})

	t.Run("fragmented message", func(t *testing.T) {
		// A 16-byte write buffer: gorilla sends the message in frames
		// of 16 bytes, a text frame and continuations; rec sees them.
		rec := &recordingConn{}
		d := &websocket.Dialer{WriteBufferSize: 16, NetDialContext: rec.dial}
		c, _ := authedWS(t, g, d, demo.AccessToken)
		msg := `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":7,"Data":{"pad":"` + strings.Repeat("p", 100) + `"}}`
		if z := exchange(t, c, msg, 7); z.Action == "Error" || z.Topic != "ServerInfo" {
			t.Fatalf("fragmented ServerInfo: %+v %s", z, z.Data)
		}
		frames := rec.frames(t)
		t.Logf("%d frames sent", len(frames))
		if len(frames) < 2 || frames[0] != 0x01 || frames[len(frames)-1] != 0x80 {
			t.Fatalf("frames sent (FIN|opcode): %x, want a text frame without FIN, continuations, a final one", frames)
		}
	})

	closing := []struct {
		name     string
		compress bool
		send     func(c *websocket.Conn) error
		want     int
	}{
		{"oversized", false, func(c *websocket.Conn) error {
			msg := `{"Controller":"Zenith","Topic":"ServerInfo","Data":"` + strings.Repeat("a", 1<<20) + `"}`
			return c.WriteMessage(websocket.TextMessage, []byte(msg))
		}, websocket.CloseMessageTooBig},
		{"compressed bomb", true, func(c *websocket.Conn) error {
			c.EnableWriteCompression(true)
			if err := c.SetCompressionLevel(flate.BestCompression); err != nil {
				return err
			}
			return c.WriteMessage(websocket.TextMessage, bombMessage())
		}, websocket.CloseMessageTooBig},
		{"invalid UTF-8", false, func(c *websocket.Conn) error {
			return c.WriteMessage(websocket.TextMessage, []byte("{\"Controller\":\"Zenith\",\"Topic\":\"Server\xffInfo\"}"))
		}, websocket.CloseInvalidFramePayloadData},
		{"binary frame", false, func(c *websocket.Conn) error {
			return c.WriteMessage(websocket.BinaryMessage, []byte(`{"Controller":"Zenith","Topic":"ServerInfo"}`))
		}, websocket.CloseUnsupportedData},
	}
	for _, tc := range closing {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingConn{}
			d := &websocket.Dialer{EnableCompression: tc.compress, NetDialContext: rec.dial}
			c, resp := authedWS(t, g, d, demo.AccessToken)
			ext := resp.Header.Get("Sec-WebSocket-Extensions")
			if tc.compress != strings.Contains(ext, "permessage-deflate") {
				t.Fatalf("Sec-WebSocket-Extensions %q, want permessage-deflate: %v", ext, tc.compress)
			}
			serverInfoAnswered(t, c, 1)
			before := rec.size()
			// The server may close before the whole frame is written: a
			// write error is expected then; the close frame is what counts.
			_ = tc.send(c)
			if sent := rec.size() - before; tc.compress && sent > 64<<10 {
				// gorilla's read limit counts these bytes.
				t.Fatalf("the bomb took %d bytes on the wire, want a few kilobytes", sent)
			} else if tc.compress {
				t.Logf("the bomb took %d bytes on the wire", sent)
			}
			if code := readClose(t, c); code != tc.want {
				t.Fatalf("close %d, want %d", code, tc.want)
			}
		})
	}
}

// bombMessage is a 2 MiB message that deflates to a few kilobytes.
func bombMessage() []byte {
	return []byte(`{"Controller":"Zenith","Topic":"ServerInfo","Data":"` + strings.Repeat("a", 2<<20) + `"}`)
}

// recordingConn records what a client writes on the connection it dials,
// and what it reads.
type recordingConn struct {
	net.Conn
	mu      sync.Mutex
	written []byte
	read    []byte
}

func (r *recordingConn) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.mu.Lock()
	r.read = append(r.read, b[:n]...)
	r.mu.Unlock()
	return n, err
}

func (r *recordingConn) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	r.Conn = c
	return r, err
}

func (r *recordingConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.written = append(r.written, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

// size is how many bytes the client has written.
func (r *recordingConn) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.written)
}

// frames returns the first byte (FIN bit and opcode) of each WebSocket
// frame written after the handshake.
func (r *recordingConn) frames(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b, ok := bytes.Cut(r.written, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no handshake in what the client wrote")
	}
	var heads []byte
	for len(b) >= 2 {
		head, n := b[0], int(b[1]&0x7f)
		hdr := 2
		switch n {
		case 126, 127:
			size := 2
			if n == 127 {
				size = 8
			}
			if len(b) < 2+size {
				t.Fatalf("a truncated frame in what the client wrote")
			}
			n = 0
			for _, c := range b[2 : 2+size] {
				n = n<<8 | int(c)
			}
			hdr += size
		}
		if b[1]&0x80 != 0 {
			hdr += 4 // the mask
		}
		if len(b) < hdr+n {
			t.Fatalf("a truncated frame in what the client wrote")
		}
		heads = append(heads, head)
		b = b[hdr+n:]
	}
	return heads
}
