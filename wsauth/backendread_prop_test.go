package wsauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The backend leg's reader against gorilla's: the same bytes, cut into
// chunks anywhere, must give the client exactly the messages gorilla's own
// client reader reads from them, and the close its end calls for.
//
// It failed when: an empty ping was the last bytes of a read (need(0) on a
// buffer given back: a nil dereference that took the process down), and
// when an empty data frame followed a control frame as a read's last bytes
// (Consume(0) on no buffer put a nil into the read buffers' pool:
// wsframe.StrictPools panics).

// feedEnv is a gateway whose backend legs read the chunks next gives,
// after a 101 (sent alone, or with the first chunk when glue is set).
type feedEnv struct {
	*testEnv
	mu   sync.Mutex
	next [][]byte
	glue bool
	last *feedConn
}

func newFeedEnv(t testing.TB) *feedEnv {
	fe := &feedEnv{testEnv: newTestEnv(t, nil)}
	fe.gw.dialer.NetDialContext = func(context.Context, string, string) (net.Conn, error) {
		fe.mu.Lock()
		chunks, glue := fe.next, fe.glue
		fe.mu.Unlock()
		fc, conn, err := newFeedFrameConn(nil, true)
		if err != nil {
			return nil, err
		}
		if glue && len(chunks) > 0 {
			first := chunks[0]
			conn.f.first = func() []byte { return append(accept101(conn.writtenBytes(), ""), first...) }
			chunks = chunks[1:]
		} else {
			conn.f.first = func() []byte { return accept101(conn.writtenBytes(), "") }
		}
		conn.f.chunks = chunks
		fe.mu.Lock()
		fe.last = conn
		fe.mu.Unlock()
		return fc, nil
	}
	return fe
}

// session opens a client session (deflate negotiated or not) whose
// backend sends chunks, and returns what the client read and its close
// code (-1 without one).
func (fe *feedEnv) session(t testing.TB, chunks [][]byte, glue, deflate bool) ([]wireMsg, int) {
	t.Helper()
	fe.mu.Lock()
	fe.next, fe.glue = chunks, glue
	fe.mu.Unlock()
	d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, HandshakeTimeout: 5 * time.Second, EnableCompression: deflate}
	c, _, err := fe.tryDial(bearer(tokDemo), d)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	var got []wireMsg
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		typ, data, err := c.ReadMessage()
		if err != nil {
			if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
				return got, ce.Code
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return got, -1
			}
			t.Fatalf("client read: %v", err)
		}
		got = append(got, wireMsg{typ, string(data)})
	}
}

// TestBackendReaderSplitEverywhere: the crash's class. A stream of every
// case the crash came from, cut in two at every byte boundary, and
// delivered a byte at a time, gives the client what gorilla reads, with
// the client's deflate on and off (the batch and verbatim runs, or the
// scratch path).
func TestBackendReaderSplitEverywhere(t *testing.T) {
	stream := classStream()
	want, end := referenceRead(t, stream)
	if len(want) != 9 {
		t.Fatalf("the reference read %d messages (%v), the stream holds 9", len(want), end)
	}
	for _, deflate := range []bool{false, true} {
		t.Run(fmt.Sprintf("deflate=%v", deflate), func(t *testing.T) {
			fe := newFeedEnv(t)
			got, code := fe.session(t, bytewise(stream), false, deflate)
			checkSame(t, "a byte at a time", got, code, want, end)
			for cut := 1; cut < len(stream); cut++ {
				for _, glue := range []bool{false, true} {
					got, code := fe.session(t, chunked(stream, cut), glue, deflate)
					checkSame(t, fmt.Sprintf("cut at %d (glued to the 101: %v)", cut, glue), got, code, want, end)
				}
			}
		})
	}
}

// TestBackendReaderRandomChunks: random streams (every opcode, payloads
// of 0, 1, 125, 126, 127, 65535, 65536 bytes and random lengths,
// fragments with control frames between them, every length form) cut at
// random boundaries, and one delivered a byte at a time, give the client
// what gorilla reads, with the client's deflate on and off.
func TestBackendReaderRandomChunks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 25))
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for _, deflate := range []bool{false, true} {
		t.Run(fmt.Sprintf("deflate=%v", deflate), func(t *testing.T) {
			fe := newFeedEnv(t)
			for i := range rounds {
				stream := randomStream(r, 1+r.IntN(30), i%4 == 0)
				want, end := referenceRead(t, stream)
				chunks := randomChunks(r, stream)
				if i == 0 {
					chunks = bytewise(stream)
				}
				got, code := fe.session(t, chunks, i%2 == 1, deflate)
				checkSame(t, fmt.Sprintf("round %d (%d bytes in %d chunks)", i, len(stream), len(chunks)), got, code, want, end)
			}
		})
	}
}
