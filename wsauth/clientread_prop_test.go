package wsauth

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// maskStream masks every frame of a server's stream (as appendFrame
// writes it) with a random key: the same frames as a client sends them.
func maskStream(r *rand.Rand, b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		n, hdr := int(b[1]&0x7f), 2
		switch n {
		case 126:
			n, hdr = int(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			n, hdr = int(binary.BigEndian.Uint64(b[2:])), 10
		}
		var key [4]byte
		binary.LittleEndian.PutUint32(key[:], r.Uint32())
		out = append(out, b[0], b[1]|wsframe.MaskBit)
		out = append(out, b[2:hdr]...)
		out = append(out, key[:]...)
		out = wsframe.AppendMasked(out, b[hdr:hdr+n], key)
		b = b[hdr+n:]
	}
	return out
}

// serverRead is what gorilla's server reader, over conn (its upgrade
// already read), reads from the client's frames conn gives: the messages
// and the error that ended them.
func serverRead(t testing.TB, conn net.Conn) ([]wireMsg, error) {
	t.Helper()
	u := websocket.Upgrader{HandshakeTimeout: 5 * time.Second, CheckOrigin: func(*http.Request) bool { return true }}
	req := httptest.NewRequest(http.MethodGet, "http://gateway.test/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	w := &hijackRecorder{ResponseRecorder: httptest.NewRecorder(), conn: conn}
	c, err := u.Upgrade(w, req, nil)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer c.Close()
	c.SetReadLimit(DefaultMaxMessageBytes)
	return readAllMessages(c)
}

// hijackRecorder hands gorilla's Upgrader conn.
type hijackRecorder struct {
	*httptest.ResponseRecorder
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(bufio.NewReader(strings.NewReader("")), bufio.NewWriter(h.conn)), nil
}

// plainConn reads b, then EOF; writes go nowhere.
type plainConn struct {
	refConn
}

func newPlainConn(b []byte) *plainConn {
	c := &plainConn{}
	c.r = bytes.NewReader(b)
	return c
}

// sameEnd reports whether two readers' ends are the same: the same close
// code, or both an end of stream without a close.
func sameEnd(a, b error) bool {
	ca, okA := errors.AsType[*websocket.CloseError](a)
	cb, okB := errors.AsType[*websocket.CloseError](b)
	if okA || okB {
		return okA && okB && ca.Code == cb.Code && ca.Text == cb.Text
	}
	return (a == nil) == (b == nil)
}

// checkServerSame reads the client's frames stream through a wsframe.Conn
// that reads chunks, and compares with gorilla over a plain connection.
func checkServerSame(t *testing.T, what string, stream []byte, chunks [][]byte) {
	t.Helper()
	want, wantEnd := serverRead(t, newPlainConn(stream))
	fc, conn, err := newFeedFrameConn(chunks, false)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, gotEnd := serverRead(t, fc)
	checkSame(t, what, got, 0, want, nil)
	if !sameEnd(gotEnd, wantEnd) {
		t.Fatalf("%s: the wsframe.Conn's reader ended with %v, gorilla over a plain connection with %v", what, gotEnd, wantEnd)
	}
}

// TestClientReaderSplitEverywhere: the client leg's reads (gorilla's
// reader over wsframe.Conn.Read, which reads the socket into its pooled
// buffers) give what gorilla reads over a plain connection from the same
// masked frames, cut in two at every byte boundary, a byte at a time, and
// at random boundaries.
func TestClientReaderSplitEverywhere(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 6455))
	stream := maskStream(r, classStream())
	checkServerSame(t, "a byte at a time", stream, bytewise(stream))
	for cut := 1; cut < len(stream); cut++ {
		checkServerSame(t, fmt.Sprintf("cut at %d", cut), stream, chunked(stream, cut))
	}
	for i := range 30 {
		s := maskStream(r, randomStream(r, 1+r.IntN(30), i%4 == 0))
		checkServerSame(t, fmt.Sprintf("random stream %d", i), s, randomChunks(r, s))
	}
}
