package wsframe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// TestAppendHeader: the header of every length class, in the shortest
// form, masked or not, byte for byte; ParseHeader reads an unmasked one
// back, asking for the bytes it lacks.
func TestAppendHeader(t *testing.T) {
	key := []byte{1, 2, 3, 4}
	for _, tt := range []struct {
		n    int
		want []byte // unmasked
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{65535, []byte{0x81, 126, 0xff, 0xff}},
		{65536, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		if got := AppendHeader([]byte("x"), FinalBit|websocket.TextMessage, tt.n, nil); !bytes.Equal(got[1:], tt.want) || got[0] != 'x' {
			t.Errorf("%d bytes: header %x, want %x after what b held", tt.n, got, tt.want)
		}
		masked := append([]byte{tt.want[0], tt.want[1] | MaskBit}, tt.want[2:]...)
		if got := AppendHeader(nil, FinalBit|websocket.TextMessage, tt.n, key); !bytes.Equal(got, append(masked, key...)) {
			t.Errorf("%d bytes, masked: header %x, want %x", tt.n, got, append(masked, key...))
		}
		_, size, err := ParseHeader(tt.want[:2], false)
		if err != nil || size != len(tt.want) {
			t.Fatalf("%d bytes, the first two: size %d, %v; want %d", tt.n, size, err, len(tt.want))
		}
		if h, size, err := ParseHeader(tt.want, false); err != nil || size != len(tt.want) ||
			h != (Header{Op: websocket.TextMessage, Fin: true, Len: int64(tt.n)}) {
			t.Errorf("%d bytes: parsed %+v, size %d, %v", tt.n, h, size, err)
		}
	}
	if _, size, err := ParseHeader([]byte{0x81}, false); size != 2 || err != nil {
		t.Errorf("one byte: size %d, %v; want 2", size, err)
	}
}

// TestParseHeaderAsGorilla: ParseHeader judges a server's frame header as
// gorilla's client reader does, in its words: every first byte (FIN, RSV
// bits, opcode) with lengths in each form, masked or not, between
// messages and within one, and a 64-bit length past int64. A header it
// takes, gorilla reads on without a protocol error; one it refuses,
// gorilla refuses with the same text.
func TestParseHeaderAsGorilla(t *testing.T) {
	key := []byte{9, 9, 9, 9}
	tails := [][]byte{
		{0},
		{125},
		{126, 0, 0},
		{127, 0, 0, 0, 0, 0, 0, 0, 0},
		append([]byte{MaskBit}, key...),
		append([]byte{MaskBit | 125}, key...),
	}
	type verdict struct {
		protocol string // the ProtocolError's text
		limit    bool   // websocket.ErrReadLimit
	}
	check := func(t *testing.T, hdr []byte, cont bool) {
		t.Helper()
		var want verdict
		_, size, err := ParseHeader(hdr, cont)
		if err == nil && size != len(hdr) {
			t.Fatalf("%x: size %d, the header has %d bytes", hdr, size, len(hdr))
		}
		if pe, ok := errors.AsType[ProtocolError](err); ok {
			want.protocol = string(pe)
		} else if err != nil {
			want.limit = errors.Is(err, websocket.ErrReadLimit)
			if !want.limit {
				t.Fatalf("%x: %v", hdr, err)
			}
		}
		got := gorillaReads(t, hdr, cont)
		switch {
		case want.protocol != "":
			if got == nil || got.Error() != "websocket: "+want.protocol {
				t.Errorf("%x (cont %v): ParseHeader refuses it (%s), gorilla: %v", hdr, cont, want.protocol, got)
			}
		case want.limit:
			if !errors.Is(got, websocket.ErrReadLimit) {
				t.Errorf("%x (cont %v): ParseHeader fails with ErrReadLimit, gorilla with %v", hdr, cont, got)
			}
		default:
			if _, ok := errors.AsType[*websocket.CloseError](got); !ok && !errors.Is(got, io.ErrUnexpectedEOF) {
				t.Errorf("%x (cont %v): ParseHeader takes it, gorilla fails with %v", hdr, cont, got)
			}
		}
	}
	for b0 := range 256 {
		for _, tail := range tails {
			for _, cont := range []bool{false, true} {
				check(t, append([]byte{byte(b0)}, tail...), cont)
			}
		}
	}
	check(t, []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, false)
}

// gorillaReads is the error gorilla's client reader ends with on a
// stream of the frame whose header is hdr (within a message when cont),
// its payload a close frame's valid one of the length hdr says, then the
// stream's end.
func gorillaReads(t *testing.T, hdr []byte, cont bool) error {
	t.Helper()
	n := int(hdr[1] & 0x7f)
	if n >= 126 {
		n = 0 // the 16- and 64-bit lengths in the table are 0
	}
	var stream []byte
	if cont {
		stream = append(stream, websocket.TextMessage, 0) // a message begun
	}
	stream = append(stream, hdr...)
	if n >= 2 {
		stream = append(stream, 0x03, 0xe8)
		stream = append(stream, strings.Repeat("a", n-2)...)
	} else {
		stream = append(stream, strings.Repeat("a", n)...)
	}
	c := gorillaClient(t, stream)
	defer c.Close()
	for {
		_, r, err := c.NextReader()
		if err != nil {
			return err
		}
		if _, err := io.ReadAll(r); err != nil {
			return err
		}
	}
}

// gorillaClient is a gorilla client Conn whose server sent stream after
// its 101; what the client writes goes nowhere.
func gorillaClient(t *testing.T, stream []byte) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) {
		idle, other := net.Pipe() // addresses, deadlines, Close
		other.Close()
		return &upgradedConn{Conn: idle, after: stream}, nil
	}}
	c, _, err := d.Dial("ws://server.test/", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// upgradedConn is a server in memory: it answers the upgrade request
// written to it with a 101, then after, then EOF; later writes are
// dropped. The rest of net.Conn is Conn's.
type upgradedConn struct {
	net.Conn
	req   bytes.Buffer
	after []byte
	r     io.Reader
}

func (c *upgradedConn) Read(p []byte) (int, error) {
	if c.r == nil {
		req, err := http.ReadRequest(bufio.NewReader(&c.req))
		if err != nil {
			return 0, err
		}
		c.r = io.MultiReader(strings.NewReader(switching101(req.Header.Get("Sec-WebSocket-Key"))), bytes.NewReader(c.after))
	}
	return c.r.Read(p)
}

func (c *upgradedConn) Write(p []byte) (int, error) {
	if c.r == nil {
		c.req.Write(p)
	}
	return len(p), nil
}

// switching101 is a server's 101 answering an upgrade whose
// Sec-WebSocket-Key is key.
func switching101(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return fmt.Sprintf("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
}

// TestAppendMasked: masking as RFC 6455 §5.3 defines it, byte by byte,
// for every length around the eight-byte steps, after what b held.
func TestAppendMasked(t *testing.T) {
	key := [4]byte{0xa1, 0xb2, 0xc3, 0xd4}
	for n := range 40 {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*31 + 7)
		}
		got := AppendMasked([]byte("hdr"), data, key)
		want := []byte("hdr")
		for i, c := range data {
			want = append(want, c^key[i%4])
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %x, want %x", n, got, want)
		}
		if back := AppendMasked(nil, got[3:], key); !bytes.Equal(back, data) {
			t.Fatalf("%d bytes: masking twice gives %x, not the data", n, back)
		}
	}
}
