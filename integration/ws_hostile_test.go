package integration

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
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
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
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
		// of 16 bytes, a text frame and continuations.
		c, _ := authedWS(t, g, &websocket.Dialer{WriteBufferSize: 16}, demo.AccessToken)
		msg := `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":7,"Data":{"pad":"` + strings.Repeat("p", 100) + `"}}`
		if z := exchange(t, c, msg, 7); z.Action == "Error" || z.Topic != "ServerInfo" {
			t.Fatalf("fragmented ServerInfo: %+v %s", z, z.Data)
		}
	})

	closing := []struct {
		name string
		d    func() *websocket.Dialer
		send func(c *websocket.Conn) error
		want int
	}{
		{"oversized", nil, func(c *websocket.Conn) error {
			msg := `{"Controller":"Zenith","Topic":"ServerInfo","Data":"` + strings.Repeat("a", 1<<20) + `"}`
			return c.WriteMessage(websocket.TextMessage, []byte(msg))
		}, websocket.CloseMessageTooBig},
		{"compressed bomb", func() *websocket.Dialer { return &websocket.Dialer{EnableCompression: true} }, func(c *websocket.Conn) error {
			c.EnableWriteCompression(true)
			if err := c.SetCompressionLevel(flate.BestCompression); err != nil {
				return err
			}
			return c.WriteMessage(websocket.TextMessage, bombMessage())
		}, websocket.CloseMessageTooBig},
		{"invalid UTF-8", nil, func(c *websocket.Conn) error {
			return c.WriteMessage(websocket.TextMessage, []byte("{\"Controller\":\"Zenith\",\"Topic\":\"Server\xffInfo\"}"))
		}, websocket.CloseInvalidFramePayloadData},
		{"binary frame", nil, func(c *websocket.Conn) error {
			return c.WriteMessage(websocket.BinaryMessage, []byte(`{"Controller":"Zenith","Topic":"ServerInfo"}`))
		}, websocket.CloseUnsupportedData},
	}
	for _, tc := range closing {
		t.Run(tc.name, func(t *testing.T) {
			var d *websocket.Dialer
			if tc.d != nil {
				d = tc.d()
			}
			c, resp := authedWS(t, g, d, demo.AccessToken)
			if tc.name == "compressed bomb" {
				if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
					t.Fatalf("permessage-deflate not negotiated: %q", ext)
				}
				// The bomb is small on the wire: what gorilla's read
				// limit would count.
				if n := compressedSize(t, bombMessage()); n > 64<<10 {
					t.Fatalf("the bomb is %d bytes compressed, want a small frame", n)
				}
			}
			serverInfoAnswered(t, c, 1)
			// The server may close before the whole frame is written: a
			// write error is expected then; the close frame is what counts.
			_ = tc.send(c)
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

// compressedSize is the size of msg deflated at the best compression.
func compressedSize(t *testing.T, msg []byte) int {
	t.Helper()
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(msg)
	w.Close()
	return b.Len()
}
