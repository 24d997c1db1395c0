package wsauth

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// wireMsg is a message as a reader gives it.
type wireMsg struct {
	typ  int
	data string
}

// streamGen builds a backend's stream of valid frames: messages of every
// kind, whole or in fragments with control frames between them, pings and
// pongs between messages, lengths in every form.
type streamGen struct {
	r   *rand.Rand
	buf []byte
}

// frameForm: 0 the shortest length form, 1 a 16-bit length, 2 a 64-bit
// one (valid for gorilla and for the gateway's reader alike).
func appendFrame(b []byte, fin bool, op byte, p []byte, form int) []byte {
	b0 := op
	if fin {
		b0 |= wsframe.FinalBit
	}
	n := len(p)
	switch {
	case form == 0 && n < 126:
		b = append(b, b0, byte(n))
	case form <= 1 && n < 1<<16:
		b = append(b, b0, 126, byte(n>>8), byte(n))
	default:
		b = append(b, b0, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, p...)
}

var propLengths = []int{0, 1, 2, 125, 126, 127, 65535, 65536}

func (g *streamGen) length(big bool) int {
	switch k := g.r.IntN(10); {
	case k < 5:
		l := propLengths[g.r.IntN(len(propLengths))]
		if !big && l > 127 {
			return l % 200
		}
		return l
	case k < 8:
		return g.r.IntN(300)
	default:
		if big {
			return g.r.IntN(70000)
		}
		return g.r.IntN(1000)
	}
}

// payload is n bytes: valid UTF-8 for text (ASCII and a few multi-byte
// runes, never cut), anything for binary.
func (g *streamGen) payload(op byte, n int) []byte {
	p := make([]byte, 0, n)
	if op == websocket.TextMessage {
		for len(p) < n {
			if n-len(p) >= 3 && g.r.IntN(8) == 0 {
				p = utf8.AppendRune(p, '€')
				continue
			}
			p = append(p, byte('a'+g.r.IntN(26)))
		}
		return p
	}
	for range n {
		p = append(p, byte(g.r.UintN(256)))
	}
	return p
}

func (g *streamGen) control() {
	op := byte(websocket.PingMessage)
	if g.r.IntN(3) == 0 {
		op = websocket.PongMessage
	}
	n := 0
	if g.r.IntN(2) == 0 {
		n = []int{1, 2, 125, g.r.IntN(126)}[g.r.IntN(4)]
	}
	g.buf = appendFrame(g.buf, true, op, g.payload(websocket.BinaryMessage, n), 0)
}

// message adds a message (whole or in fragments, control frames between
// them) and returns it.
func (g *streamGen) message(big bool) wireMsg {
	op := byte(websocket.TextMessage)
	if g.r.IntN(2) == 0 {
		op = websocket.BinaryMessage
	}
	data := g.payload(op, g.length(big))
	parts := 1
	if g.r.IntN(3) == 0 {
		parts = 2 + g.r.IntN(3)
	}
	var cuts []int
	for range parts - 1 {
		cuts = append(cuts, g.r.IntN(len(data)+1))
	}
	cuts = append(cuts, len(data))
	slicesSort(cuts)
	from := 0
	for i, to := range cuts {
		fop := op
		if i > 0 {
			fop = 0 // continuation
		}
		form := 0
		if g.r.IntN(6) == 0 {
			form = 1 + g.r.IntN(2)
		}
		g.buf = appendFrame(g.buf, i == len(cuts)-1, fop, data[from:to], form)
		from = to
		if i < len(cuts)-1 && g.r.IntN(2) == 0 {
			g.control()
		}
	}
	return wireMsg{int(op), string(data)}
}

func slicesSort(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// end ends the stream: a close frame with a code and reason, an empty
// close frame, or nothing (the connection ends).
func (g *streamGen) end() {
	switch g.r.IntN(4) {
	case 0:
		g.buf = appendFrame(g.buf, true, websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), 0)
	case 1:
		g.buf = appendFrame(g.buf, true, websocket.CloseMessage, websocket.FormatCloseMessage(4000+g.r.IntN(999), "app"), 0)
	case 2:
		g.buf = appendFrame(g.buf, true, websocket.CloseMessage, nil, 0)
	}
}

// randomStream is a stream of about n messages.
func randomStream(r *rand.Rand, n int, big bool) []byte {
	g := &streamGen{r: r}
	for range n {
		if g.r.IntN(4) == 0 {
			g.control()
		}
		g.message(big)
	}
	g.end()
	return g.buf
}

// classStream holds the cases the crash came from, each at least once: an
// empty ping and an empty pong, an empty data frame right after a control
// frame, fragments with empty ping between them, every length form, and
// ends with a close.
func classStream() []byte {
	var b []byte
	b = appendFrame(b, true, websocket.PingMessage, nil, 0)
	b = appendFrame(b, true, websocket.TextMessage, nil, 0)
	b = appendFrame(b, true, websocket.PongMessage, nil, 0)
	b = appendFrame(b, true, websocket.BinaryMessage, nil, 0)
	b = appendFrame(b, true, websocket.TextMessage, []byte("a"), 0)
	b = appendFrame(b, false, websocket.TextMessage, nil, 0)
	b = appendFrame(b, true, websocket.PingMessage, nil, 0)
	b = appendFrame(b, false, 0, []byte("frag"), 0)
	b = appendFrame(b, true, websocket.PingMessage, []byte("p"), 0)
	b = appendFrame(b, true, 0, nil, 0)
	b = appendFrame(b, true, websocket.BinaryMessage, bytes.Repeat([]byte{0xfe}, 125), 0)
	b = appendFrame(b, true, websocket.TextMessage, []byte(strings.Repeat("x", 126)), 0)
	b = appendFrame(b, true, websocket.TextMessage, []byte(strings.Repeat("y", 127)), 1)
	b = appendFrame(b, true, websocket.BinaryMessage, []byte("z"), 2)
	b = appendFrame(b, true, websocket.PingMessage, bytes.Repeat([]byte("q"), 125), 0)
	b = appendFrame(b, true, websocket.TextMessage, nil, 1)
	b = appendFrame(b, true, websocket.PingMessage, nil, 0)
	b = appendFrame(b, true, websocket.CloseMessage, websocket.FormatCloseMessage(4001, "done"), 0)
	return b
}

// referenceRead is what gorilla's own client reader reads from stream,
// sent by a server after its 101: the messages and the error that ended
// them.
func referenceRead(t testing.TB, stream []byte) ([]wireMsg, error) {
	t.Helper()
	d := websocket.Dialer{
		NetDialContext: func(context.Context, string, string) (net.Conn, error) {
			return &refConn{stream: stream}, nil
		},
		HandshakeTimeout: 5 * time.Second,
	}
	c, _, err := d.Dial("ws://backend.test/zenith", nil)
	if err != nil {
		t.Fatalf("reference dial: %v", err)
	}
	c.SetReadLimit(DefaultMaxBackendMessageBytes)
	return readAllMessages(c)
}

// readAllMessages reads c's messages until it fails: the messages and the error.
func readAllMessages(c *websocket.Conn) ([]wireMsg, error) {
	var got []wireMsg
	for {
		typ, data, err := c.ReadMessage()
		if err != nil {
			return got, err
		}
		got = append(got, wireMsg{typ, string(data)})
	}
}

// refConn serves a 101 answering what was written to it, then stream,
// then EOF.
type refConn struct {
	mu     sync.Mutex
	req    bytes.Buffer
	stream []byte
	r      *bytes.Reader
}

func (c *refConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r == nil {
		c.r = bytes.NewReader(append(accept101(c.req.Bytes(), ""), c.stream...))
	}
	return c.r.Read(p)
}

func (c *refConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r == nil {
		c.req.Write(p)
	}
	return len(p), nil
}

func (c *refConn) Close() error                     { return nil }
func (c *refConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *refConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *refConn) SetDeadline(time.Time) error      { return nil }
func (c *refConn) SetReadDeadline(time.Time) error  { return nil }
func (c *refConn) SetWriteDeadline(time.Time) error { return nil }

// chunked cuts b at the offsets given (ascending, within b).
func chunked(b []byte, cuts ...int) [][]byte {
	var out [][]byte
	from := 0
	for _, c := range cuts {
		if c > from && c < len(b) {
			out = append(out, b[from:c])
			from = c
		}
	}
	return append(out, b[from:])
}

// bytewise is b a byte at a time.
func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// randomChunks cuts b at random, in chunks of 1 byte to about 40 KiB.
func randomChunks(r *rand.Rand, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		var n int
		switch r.IntN(4) {
		case 0:
			n = 1 + r.IntN(3)
		case 1:
			n = 1 + r.IntN(200)
		case 2:
			n = 1 + r.IntN(5000)
		default:
			n = 1 + r.IntN(40000)
		}
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// clientCloseFor is the close the client must get when the backend's
// stream ended as gorilla read it (end).
func clientCloseFor(end error) int {
	ce, ok := errors.AsType[*websocket.CloseError](end)
	if !ok {
		return websocket.CloseInternalServerErr
	}
	return clientCloseCode(ce.Code)
}

// checkSame compares the client's messages and close with the reference.
func checkSame(t testing.TB, what string, got []wireMsg, code int, want []wireMsg, end error) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Fatalf("%s: the client got %d messages, gorilla read %d (missing %d: type %d, %d bytes)", what, len(got), len(want), i, want[i].typ, len(want[i].data))
		case i >= len(want):
			t.Fatalf("%s: the client got %d messages, gorilla read %d (extra %d: type %d, %d bytes)", what, len(got), len(want), i, got[i].typ, len(got[i].data))
		case got[i] != want[i]:
			t.Fatalf("%s: message %d: type %d, %d bytes %.40q; gorilla read type %d, %d bytes %.40q", what, i, got[i].typ, len(got[i].data), got[i].data, want[i].typ, len(want[i].data), want[i].data)
		}
	}
	if end == nil {
		return
	}
	if w := clientCloseFor(end); code != w {
		t.Fatalf("%s: the client's close %d, want %d (the backend's stream ended with %v)", what, code, w, end)
	}
}
