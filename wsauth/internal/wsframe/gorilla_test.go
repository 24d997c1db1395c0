package wsframe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The contract with gorilla (doc.go): gorilla's real Upgrader, Dialer and
// Conn, over Conns, doing what the gateway has them do. Each test fails
// when gorilla stops keeping a part of it (a gorilla upgrade that does
// must fail here, not silently turn batching off or a data frame away).

// recorder is a net.Conn that keeps a copy of each Write.
type recorder struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(p))
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// take returns the writes so far, and forgets them.
func (r *recorder) take() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// hijackTo hands gorilla's Upgrader conn, the request having been read
// with br.
type hijackTo struct {
	http.ResponseWriter
	conn net.Conn
	br   *bufio.Reader
}

func (h hijackTo) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(h.br, bufio.NewWriter(h.conn)), nil
}

// upgraded is a socket gorilla upgraded at both ends: the server's Conn
// (NewServer) under sc and the client's (NewClient) under cc, each over a
// recorder of the TCP connection's end.
type upgraded struct {
	sc, cc     *websocket.Conn
	srv, cli   *Conn
	srec, crec *recorder
	resp       *http.Response // the 101 as the client read it
}

// upgrade runs gorilla's Upgrader (compression enabled or not, header
// its extra response header lines) and Dialer (offering permessage-deflate
// or not) against each other over a loopback TCP connection.
func upgrade(t *testing.T, enable, offer bool, header http.Header) *upgraded {
	t.Helper()
	a, b := tcpPair(t)
	u := &upgraded{srec: &recorder{Conn: a}, crec: &recorder{Conn: b}}
	u.srv, u.cli = NewServer(u.srec, 5*time.Second), NewClient(u.crec, 5*time.Second)
	dialed := make(chan error, 1)
	go func() {
		d := websocket.Dialer{
			NetDialContext:    func(context.Context, string, string) (net.Conn, error) { return u.cli, nil },
			EnableCompression: offer,
			HandshakeTimeout:  5 * time.Second,
		}
		var err error
		u.cc, u.resp, err = d.Dial("ws://gateway.test/ws", nil)
		dialed <- err
	}()
	br := bufio.NewReader(a)
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.Upgrader{EnableCompression: enable, CheckOrigin: func(*http.Request) bool { return true }}
	if u.sc, err = up.Upgrade(hijackTo{httptest.NewRecorder(), u.srv, br}, req, header); err != nil {
		t.Fatal(err)
	}
	if err := <-dialed; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.sc.Close(); u.cc.Close() })
	return u
}

// TestGorillaWrites101Whole: gorilla's Upgrader writes its 101 in one
// Write, whole (nothing before it, nothing of it after), and the Conn
// knows from it whether permessage-deflate was negotiated, as the client
// read it: with compression on both sides, on one, on neither, and with a
// long header. It fails if gorilla writes the 101 in pieces (the Conn
// would miss the extension, and batch its own frames beside gorilla's
// compressed ones).
func TestGorillaWrites101Whole(t *testing.T) {
	long := http.Header{"X-Long": {strings.Repeat("h", 3000)}}
	for _, tt := range []struct {
		enable, offer bool
		header        http.Header
	}{
		{true, true, nil}, {true, false, nil}, {false, true, nil}, {false, false, nil}, {true, true, long},
	} {
		t.Run(fmt.Sprintf("server %v, client %v, header %d", tt.enable, tt.offer, len(tt.header)), func(t *testing.T) {
			u := upgrade(t, tt.enable, tt.offer, tt.header)
			writes := u.srec.take()
			if len(writes) != 1 {
				t.Fatalf("gorilla wrote the 101 in %d Writes, want 1", len(writes))
			}
			r := bufio.NewReader(bytes.NewReader(writes[0]))
			resp, err := http.ReadResponse(r, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols || r.Buffered() != 0 {
				t.Fatalf("the first Write is not a whole 101 and only it: %v, %d bytes after it:\n%q", err, r.Buffered(), writes[0])
			}
			negotiated := strings.Contains(u.resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate")
			if negotiated != (tt.enable && tt.offer) {
				t.Fatalf("the client read extensions %q", u.resp.Header.Get("Sec-WebSocket-Extensions"))
			}
			if got := u.srv.Deflate(); got != negotiated || NegotiatedDeflate(writes[0]) != negotiated {
				t.Fatalf("the Conn's Deflate is %v, the 101 negotiated permessage-deflate: %v", got, negotiated)
			}
		})
	}
}

// TestGorillaWritesControlFramesWhole: gorilla's WriteControl writes a
// ping, a pong and a close in one Write each, the frame whole, on the
// server's Conn and the client's; IsCloseFrame knows the close alone
// (pings and pongs whose payload begins as a close frame does are not
// one), and after it the Conn appends no data frame, with
// permessage-deflate negotiated or not (the session frames its data
// messages itself either way). It fails if gorilla writes a control
// frame in pieces (a pong's payload written apart could read as a close,
// and every later message fail) or a close frame otherwise (the Conn
// would not see it, and write data after it); it failed with the close
// frame watched for only without permessage-deflate.
func TestGorillaWritesControlFramesWhole(t *testing.T) {
	for _, deflate := range []bool{false, true} {
		t.Run(fmt.Sprintf("permessage-deflate %v", deflate), func(t *testing.T) {
			testControlFramesWhole(t, upgrade(t, deflate, deflate, nil))
		})
	}
}

// testControlFramesWhole is TestGorillaWritesControlFramesWhole on u.
func testControlFramesWhole(t *testing.T, u *upgraded) {
	for _, leg := range []struct {
		name string
		ws   *websocket.Conn
		c    *Conn
		rec  *recorder
	}{
		{"server", u.sc, u.srv, u.srec},
		{"client", u.cc, u.cli, u.crec},
	} {
		t.Run(leg.name, func(t *testing.T) {
			leg.rec.take()
			for _, tt := range []struct {
				op      int
				payload []byte
			}{
				{websocket.PingMessage, []byte{0x88, 0x00, 'p'}},
				{websocket.PongMessage, []byte{0x88, 0x02, 0x03, 0xe8}},
				{websocket.PingMessage, nil},
				{websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")},
			} {
				if tt.op == websocket.CloseMessage {
					if err := leg.c.AppendFrame(websocket.TextMessage, []byte("before the close")); err != nil {
						t.Fatalf("a data frame after gorilla's pings and pongs: %v", err)
					}
					if err := leg.c.Flush(); err != nil {
						t.Fatal(err)
					}
					leg.rec.take()
				}
				if err := leg.ws.WriteControl(tt.op, tt.payload, time.Now().Add(time.Second)); err != nil {
					t.Fatal(err)
				}
				writes := leg.rec.take()
				if len(writes) != 1 {
					t.Fatalf("gorilla wrote control frame %d in %d Writes, want 1", tt.op, len(writes))
				}
				br := bufio.NewReader(bytes.NewReader(writes[0]))
				op, p, err := readClientFrame(br)
				if err != nil || int(op) != tt.op || writes[0][0]&FinalBit == 0 || !bytes.Equal(p, tt.payload) || br.Buffered() != 0 {
					t.Fatalf("control frame %d: the Write is not the frame whole and only it (%v): %x", tt.op, err, writes[0])
				}
				if IsCloseFrame(writes[0]) != (tt.op == websocket.CloseMessage) {
					t.Fatalf("control frame %d: IsCloseFrame %v", tt.op, IsCloseFrame(writes[0]))
				}
			}
			if err := leg.c.AppendFrame(websocket.TextMessage, []byte("after the close")); !errors.Is(err, websocket.ErrCloseSent) {
				t.Fatalf("a data frame after gorilla's close frame: %v, want websocket.ErrCloseSent", err)
			}
		})
	}
}

// TestGorillaDialLeavesFramesToConn: gorilla's Dialer, over a client's
// Conn on a TCP socket, reads the answer to its upgrade no further than
// its end, though the server sent its first frames in the same write: once
// Dial returns, the Conn's own reader has them all (RawReads, Buffered),
// and gorilla's none. It fails if gorilla reads past the 101 (those frames
// would be lost to the backend reader, which reads the Conn's buffer).
func TestGorillaDialLeavesFramesToConn(t *testing.T) {
	a, b := tcpPair(t)
	frames := append(final(websocket.TextMessage, "first"), final(websocket.BinaryMessage, strings.Repeat("x", 300))...)
	go func() {
		req, err := http.ReadRequest(bufio.NewReader(a))
		if err != nil {
			return
		}
		_, _ = a.Write(append([]byte(switching101(req.Header.Get("Sec-WebSocket-Key"))), frames...))
	}()
	c := NewClient(b, 5*time.Second)
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return c, nil }, HandshakeTimeout: 5 * time.Second}
	ws, _, err := d.Dial("ws://backend.test/zenith", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if !c.RawReads() {
		t.Fatal("after the dial, the Conn does not read the frames itself")
	}
	_ = b.SetReadDeadline(time.Now().Add(2 * time.Second)) // frames gorilla took never come
	got, err := c.Need(len(frames))
	if err != nil || !bytes.Equal(got, frames) {
		t.Fatalf("the Conn's reader has %x (%v), want the frames sent with the 101, %x", got, err, frames)
	}
}
