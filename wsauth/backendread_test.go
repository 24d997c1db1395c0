package wsauth

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// rawBackend is a backend speaking WebSocket by hand, on TCP: it answers
// the upgrade with a 101 and, in the same write, the bytes first gives;
// then run has the connection. Its URL is returned.
func rawBackend(t *testing.T, first []byte, run func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	return hostileBackend(t, func(c net.Conn, br *bufio.Reader, accept string) {
		if _, err := c.Write(append([]byte(switching(accept, "")), first...)); err != nil {
			return
		}
		run(c, br)
	})
}

// rawFrame is a server frame: FIN (or not), opcode op, payload p; b0
// extra bits (RSV) or'ed into its first byte.
func rawFrame(fin bool, op byte, p string, b0 byte) []byte {
	first := op | b0
	if fin {
		first |= wsframe.FinalBit
	}
	return append(wsframe.AppendHeader(nil, first, len(p), nil), p...)
}

// readClientFrame reads one (masked) frame the gateway sent: its opcode.
func readClientFrame(br *bufio.Reader) (op byte, payload []byte, err error) {
	b0, payload, err := readFrame(br)
	return b0 & 0xf, payload, err
}

// readFrame reads one frame, masked or not: its first byte (FIN, RSV bits,
// opcode) and its payload, unmasked.
func readFrame(br *bufio.Reader) (b0 byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, err = io.ReadFull(br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, err = io.ReadFull(br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	var key [4]byte
	if err == nil && h[1]&0x80 != 0 {
		_, err = io.ReadFull(br, key[:])
	}
	if err != nil {
		return 0, nil, err
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return 0, nil, err
	}
	for i := range payload {
		payload[i] ^= key[i&3]
	}
	return h[0], payload, nil
}

// backendGets reads the gateway's frames until one of opcode op, and
// returns its payload.
func backendGets(br *bufio.Reader, op byte) ([]byte, error) {
	for {
		o, p, err := readClientFrame(br)
		if err != nil || o == op {
			return p, err
		}
	}
}

// TestBackendFrames: the backend leg's own frame reader (TCP) as gorilla's
// was: frames sent with the 101, fragments with a ping between them (the
// backend gets its pong), a message over the limit (1009 to the backend,
// 1011 to the client), a protocol error (1002, 1011), the backend's close
// (its code to the client, echoed to the backend), the stream's end
// (1011).
func TestBackendFrames(t *testing.T) {
	hello := `{"Controller":"Zenith","Topic":"Hello"}`
	frag := `{"Controller":"Market","Topic":"Fragmented","Data":"` + strings.Repeat("x", 70000) + `"}`
	type result struct {
		op      byte
		payload []byte
	}
	tests := []struct {
		name  string
		first []byte
		run   func(c net.Conn, br *bufio.Reader) result
		want  []string // the client's messages
		code  int      // then its close code; 0: none
		limit int64
	}{
		{"frames with the 101, fragments, ping", append(rawFrame(true, 1, hello, 0), rawFrame(false, 1, frag[:10], 0)...),
			func(c net.Conn, br *bufio.Reader) result {
				_, _ = c.Write(append(rawFrame(true, 9, "ping?", 0), append(rawFrame(false, 0, frag[10:40000], 0), rawFrame(true, 0, frag[40000:], 0)...)...))
				p, _ := backendGets(br, websocket.PongMessage)
				_, _ = c.Write(rawFrame(true, 1, hello, 0))
				return result{websocket.PongMessage, p}
			}, []string{hello, frag, hello}, 0, 0},
		{"over the limit", nil,
			func(c net.Conn, br *bufio.Reader) result {
				_, _ = c.Write(rawFrame(true, 1, strings.Repeat("y", 200), 0))
				p, _ := backendGets(br, websocket.CloseMessage)
				return result{websocket.CloseMessage, p}
			}, nil, websocket.CloseInternalServerErr, 100},
		{"fragments over the limit", nil,
			func(c net.Conn, br *bufio.Reader) result {
				_, _ = c.Write(append(rawFrame(false, 1, strings.Repeat("y", 60), 0), rawFrame(true, 0, strings.Repeat("y", 60), 0)...))
				p, _ := backendGets(br, websocket.CloseMessage)
				return result{websocket.CloseMessage, p}
			}, nil, websocket.CloseInternalServerErr, 100},
		{"protocol error", nil,
			func(c net.Conn, br *bufio.Reader) result {
				_, _ = c.Write(rawFrame(true, 1, hello, 0x20))
				p, _ := backendGets(br, websocket.CloseMessage)
				return result{websocket.CloseMessage, p}
			}, nil, websocket.CloseInternalServerErr, 0},
		{"masked frame", append(rawFrame(true, 1, hello, 0), 0x81, 0x85, 1, 2, 3, 4, 'h'^1, 'e'^2, 'l'^3, 'l'^4, 'o'^1), // one read: a run, then it
			func(c net.Conn, br *bufio.Reader) result {
				p, _ := backendGets(br, websocket.CloseMessage)
				return result{websocket.CloseMessage, p}
			}, []string{hello}, websocket.CloseInternalServerErr, 0},
		{"backend close", append(rawFrame(true, 1, hello, 0), rawFrame(true, 8, "\x0f\xa1bye", 0)...),
			func(c net.Conn, br *bufio.Reader) result {
				p, _ := backendGets(br, websocket.CloseMessage)
				return result{websocket.CloseMessage, p}
			}, []string{hello}, 4001, 0},
		{"end of stream", rawFrame(true, 1, hello, 0),
			func(c net.Conn, br *bufio.Reader) result {
				time.Sleep(50 * time.Millisecond)
				return result{}
			}, []string{hello}, websocket.CloseInternalServerErr, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan result, 1)
			url := rawBackend(t, tt.first, func(c net.Conn, br *bufio.Reader) { got <- tt.run(c, br) })
			e := newTestEnv(t, func(c *Config) {
				c.Backend.Upstreams = []string{url}
				if tt.limit != 0 {
					c.Backend.MaxMessageBytes = tt.limit
				}
			})
			c := e.dial(bearer(tokDemo))
			for _, want := range tt.want {
				if m := readMsg(t, c); m != want {
					t.Fatalf("client got %.80q, want %.80q", m, want)
				}
			}
			var r result
			select {
			case r = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the backend's script did not end")
			}
			switch tt.name {
			case "frames with the 101, fragments, ping":
				if string(r.payload) != "ping?" {
					t.Errorf("pong %q", r.payload)
				}
			case "over the limit", "fragments over the limit":
				if code := binary.BigEndian.Uint16(r.payload); code != websocket.CloseMessageTooBig {
					t.Errorf("backend got close %d", code)
				}
			case "protocol error", "masked frame":
				reason := map[string]string{"protocol error": "RSV2 set", "masked frame": "bad MASK"}[tt.name]
				if code := binary.BigEndian.Uint16(r.payload); code != websocket.CloseProtocolError || !strings.Contains(string(r.payload), reason) {
					t.Errorf("backend got close %q", r.payload)
				}
			case "backend close":
				if code := binary.BigEndian.Uint16(r.payload); code != 4001 {
					t.Errorf("backend got close %d back", code)
				}
			}
			if tt.code != 0 {
				if code := closeCode(t, c); code != tt.code {
					t.Errorf("client close code %d, want %d", code, tt.code)
				}
			}
		})
	}
}

// TestBackendFrameRuns: frames that arrive together reach the client in
// order, each with its type and payload, whichever way the backend reader
// takes them: as they came (wsframe.VerbatimRun: text and binary, 7- and 16-bit
// lengths) or one by one (a length not in its shortest form, fragments, a
// ping between them answered with a pong).
func TestBackendFrameRuns(t *testing.T) {
	long := strings.Repeat("x", 300)
	var burst []byte
	burst = append(burst, rawFrame(true, 1, "one", 0)...)
	burst = append(burst, rawFrame(true, 2, "\x00two", 0)...)
	burst = append(burst, rawFrame(true, 1, long, 0)...)
	burst = append(burst, 0x81, 126, 0, 4, 'f', 'o', 'u', 'r') // 16 bits for 4
	burst = append(burst, rawFrame(true, 9, "ping?", 0)...)
	burst = append(burst, rawFrame(false, 1, "fi", 0)...)
	burst = append(burst, rawFrame(true, 0, "ve", 0)...)
	burst = append(burst, rawFrame(true, 2, "six", 0)...)
	burst = append(burst, rawFrame(true, 1, "seven", 0)...)
	pong := make(chan []byte, 1)
	url := rawBackend(t, nil, func(c net.Conn, br *bufio.Reader) {
		_, _ = c.Write(burst)
		p, _ := backendGets(br, websocket.PongMessage)
		pong <- p
		_, _ = backendGets(br, websocket.CloseMessage)
	})
	e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
	c := e.dial(bearer(tokDemo))
	want := []struct {
		typ  int
		data string
	}{{1, "one"}, {2, "\x00two"}, {1, long}, {1, "four"}, {1, "five"}, {2, "six"}, {1, "seven"}}
	for _, w := range want {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		typ, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ != w.typ || string(data) != w.data {
			t.Fatalf("client got %d %.40q, want %d %.40q", typ, data, w.typ, w.data)
		}
	}
	select {
	case p := <-pong:
		if string(p) != "ping?" {
			t.Errorf("pong %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
}

// TestBackendFrameRunsAcrossBatches: thousands of frames of every length
// class a run takes (empty, 125, 126, a few hundred, over a thousand
// bytes), arriving in writes that cut frames anywhere, reach the client
// whole and in order, across many 64 KiB batches.
func TestBackendFrameRunsAcrossBatches(t *testing.T) {
	const n = 6000
	sizes := []int{0, 1, 125, 126, 300, 1200}
	payload := func(i int) string {
		return strings.Repeat(string(rune('a'+i%26)), sizes[i%len(sizes)])
	}
	var stream []byte
	for i := range n {
		stream = append(stream, rawFrame(true, byte(1+i%2), payload(i), 0)...)
	}
	url := rawBackend(t, nil, func(c net.Conn, br *bufio.Reader) {
		for b := stream; len(b) > 0; {
			k := min(777, len(b))
			if _, err := c.Write(b[:k]); err != nil {
				return
			}
			b = b[k:]
		}
		_, _ = backendGets(br, websocket.CloseMessage)
	})
	e := newTestEnv(t, func(c *Config) { c.Backend.Upstreams = []string{url} })
	c := e.dial(bearer(tokDemo))
	for i := range n {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		typ, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != 1+i%2 || string(data) != payload(i) {
			t.Fatalf("message %d: %d %.20q (%d bytes), want %d %.20q (%d bytes)", i, typ, data, len(data), 1+i%2, payload(i), len(payload(i)))
		}
	}
}

// TestBigMsgBufReusesLargerBuffers: a pooled buffer too small for the
// message asked for does not keep a larger one from being reused: a
// client repeating a large refused message, its Error reply built in a
// bigMsgBuf, allocates the reply's buffer once, not each time. It failed
// when bigMsgBuf put the small buffer back: the next Get found it first,
// and each reply allocated its size anew (so
// TestRefusedLargeMessagesMakeLittleGarbage failed whenever an earlier
// test had left a smaller buffer in the pool).
func TestBigMsgBufReusesLargerBuffers(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	// One P, so that the pool's per-P slot is this goroutine's, and no
	// collection, which empties pools.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	small := make([]byte, 0, 100<<10)
	bigMsgBufs.Put(&small)
	first := bigMsgBuf(600 << 10)
	releaseBuf(first)
	for i := range 10 {
		bp := bigMsgBuf(600 << 10)
		if bp != first {
			t.Fatalf("message %d: a new buffer (cap %d), not the one released", i+1, cap(*bp))
		}
		releaseBuf(bp)
	}
}
