package wsauth

import (
	"bytes"
	"compress/flate"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

func TestHostileFrames(t *testing.T) {
	const deserialise = `"Data":"Data.Deserialise"}`
	big := `{"Controller":"Market","Topic":"Echo","Data":"` + strings.Repeat("a", DefaultMaxMessageBytes) + `"}`
	tests := []struct {
		name     string
		typ      int
		msg      string
		compress bool
		reply    string // the Error reply's ending, or "" when the socket closes
		code     int
	}{
		{name: "invalid JSON", msg: `{"Controller":"Market",`, reply: deserialise},
		{name: "not an object", msg: `[1]`, reply: deserialise},
		{name: "controller in another case", msg: `{"controller":"Trading","Topic":"PlaceOrder"}`, reply: deserialise},
		{name: "escaped key", msg: `{"Controller":"Market","Contr\u006fller":"Trading","Topic":"PlaceOrder"}`, reply: deserialise},
		{name: "escaped controller value is decoded before the policy", msg: `{"Controller":"Tr\u0061ding","Topic":"Place\u004frder","TransactionID":4}`,
			reply: `"Controller":"Trading","Topic":"PlaceOrder","Action":"Error","TransactionID":4,"Data":"Authority"}`},
		{name: "default controller applied before the policy", msg: `{"Topic":"PlaceOrder"}`, reply: `"Data":"Authority"}`},
		{name: "non-ASCII key", msg: `{"Controller":"Market","Topic":"Echo","ſ":1}`, reply: deserialise},
		{name: "duplicate key", msg: `{"Controller":"Market","Topic":"Echo","Controller":"Trading"}`, reply: deserialise},
		{name: "trailing bytes", msg: `{"Controller":"Market","Topic":"Echo"} {"Controller":"Trading"}`, reply: deserialise},
		{name: "binary frame", typ: websocket.BinaryMessage, msg: `{"Controller":"Market","Topic":"Echo"}`, code: websocket.CloseUnsupportedData},
		{name: "invalid UTF-8", msg: "{\"Controller\":\"Market\",\"Topic\":\"Echo\xff\"}", code: websocket.CloseInvalidFramePayloadData},
		{name: "oversized", msg: big, code: websocket.CloseMessageTooBig},
		{name: "compressed bomb", msg: big + strings.Repeat(" ", 4<<20), compress: true, code: websocket.CloseMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, EnableCompression: tt.compress}
			c, resp, err := e.tryDial(bearer(tokDemo), d)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if ext := resp.Header.Get("Sec-Websocket-Extensions"); tt.compress != strings.Contains(ext, "permessage-deflate") {
				t.Fatalf("extensions %q: compression not as asked", ext)
			}
			typ := tt.typ
			if typ == 0 {
				typ = websocket.TextMessage
			}
			if tt.compress {
				c.EnableWriteCompression(true)
			}
			if err := c.WriteMessage(typ, []byte(tt.msg)); err != nil {
				t.Fatal(err)
			}
			if tt.reply != "" {
				if got := readMsg(t, c); !strings.HasSuffix(got, tt.reply) {
					t.Fatalf("reply %s", got)
				}
				echo := `{"Controller":"Market","Topic":"Echo"}`
				if got := roundTrip(t, c, echo); got != echo {
					t.Fatalf("the socket did not stay usable: %s", got)
				}
			} else if got := closeCode(t, c); got != tt.code {
				t.Fatalf("close code %d, want %d", got, tt.code)
			}
			for _, m := range e.backend.received() {
				if m != `{"Controller":"Market","Topic":"Echo"}` {
					t.Fatalf("the backend received a hostile message: %.80q", m)
				}
			}
		})
	}
}

func TestCompressedBombIsSmallOnTheWire(t *testing.T) {
	// The bomb above closes with 1009 although gorilla's read limit, on
	// wire bytes, is never reached: its compressed form is tiny.
	var buf bytes.Buffer
	msg := `{"Data":"` + strings.Repeat(" ", 5<<20) + `"}`
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write([]byte(msg))
	_ = w.Close()
	if buf.Len() > DefaultMaxMessageBytes/8 {
		t.Fatalf("compressed bomb is %d bytes", buf.Len())
	}
}
