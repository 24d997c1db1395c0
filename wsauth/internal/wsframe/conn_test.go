package wsframe

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The tests' Conns panic on a read buffer given back that is not one.
func init() { StrictPools = true }

// TestAppendFrameKeepsOrder: frames appended to a Conn reach the
// socket in the order appended, whatever their sizes: a frame too large
// for a batch, written alone, does not overtake the batch before it (a
// 3-byte message then one of 65,530 bytes: the batch had room for the
// second's length but not for a batch's worth), on either leg.
func TestAppendFrameKeepsOrder(t *testing.T) {
	for _, client := range []bool{false, true} {
		for _, sizes := range [][]int{
			{3, 65530},
			{1, BatchBytes - MaxHeader + 1},
			{10, BatchBytes},
			{0, BatchBytes + 1},
			{3, 65530, 2, 70 << 10, 5},
			{100, BatchBytes - MaxHeader, 100},
		} {
			t.Run(fmt.Sprintf("client=%v/%v", client, sizes), func(t *testing.T) {
				a, b := net.Pipe()
				defer a.Close()
				defer b.Close()
				fc := newConn(a, client, 5*time.Second)
				got := make(chan error, 1)
				go func() {
					br := bufio.NewReader(b)
					defer func() { _, _ = io.Copy(io.Discard, br) }() // the writes never wait on a failed check
					for i, n := range sizes {
						_, p, err := readClientFrame(br)
						if err != nil {
							got <- fmt.Errorf("frame %d: %w", i, err)
							return
						}
						if len(p) != n || !bytes.Equal(p, payloadOf(i, n)) {
							got <- fmt.Errorf("frame %d: %d bytes, want the %d bytes of message %d (out of order)", i, len(p), n, i)
							return
						}
					}
					got <- nil
				}()
				for i, n := range sizes {
					if err := fc.AppendFrame(websocket.BinaryMessage, payloadOf(i, n)); err != nil {
						t.Fatalf("appendFrame %d: %v", i, err)
					}
				}
				if err := fc.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := <-got; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// readClientFrame reads one frame a Conn wrote, masked (a client's) or
// not: its opcode and its payload, unmasked.
func readClientFrame(br *bufio.Reader) (op byte, payload []byte, err error) {
	h, err := br.Peek(2)
	if err != nil {
		return 0, nil, err
	}
	size := 2 + map[byte]int{126: 2, 127: 8}[h[1]&0x7f]
	masked := h[1]&MaskBit != 0
	if masked {
		size += 4
	}
	if h, err = br.Peek(size); err != nil {
		return 0, nil, err
	}
	op, n := h[0]&0xf, uint64(h[1]&0x7f)
	if n == 126 {
		n = uint64(binary.BigEndian.Uint16(h[2:]))
	} else if n == 127 {
		n = binary.BigEndian.Uint64(h[2:])
	}
	var key [4]byte
	if masked {
		copy(key[:], h[size-4:])
	}
	_, _ = br.Discard(size)
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return 0, nil, err
	}
	return op, AppendMasked(payload[:0], payload, key), nil
}

// payloadOf is message i's payload, n bytes, each message's different.
func payloadOf(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i)}, n)
}

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return s.(*net.TCPConn), c.(*net.TCPConn)
}

// TestAbortFreesIdle: a Conn's reader runs its idle hook inside the
// socket's read, which a Close waits for; when the hook is a flush to the
// other leg waiting on a slow peer, aborting that leg first ends the
// flush at once, and the Close with it. Writes after Abort fail.
func TestAbortFreesIdle(t *testing.T) {
	a, _ := tcpPair(t)
	o, _ := tcpPair(t) // the other leg: its peer never reads
	fc := newConn(a, false, 5*time.Second)
	other := newConn(o, false, 5*time.Second)
	entered := make(chan struct{})
	flushed := make(chan error, 1)
	fc.SetHooks(Hooks{Idle: func() {
		close(entered)
		big := make([]byte, 1<<20)
		for {
			if err := other.AppendFrame(websocket.BinaryMessage, big); err != nil {
				flushed <- err
				return
			}
		}
	}})
	go func() { _ = fc.Fill() }()
	<-entered
	time.Sleep(100 * time.Millisecond) // the socket's buffers fill: the write waits
	start := time.Now()
	other.Abort()
	closed := make(chan struct{})
	go func() { _ = fc.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for the idle hook after the other leg was aborted")
	}
	if err := <-flushed; err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("the flush ended with %v after %v", err, time.Since(start))
	}
	if err := other.AppendFrame(websocket.BinaryMessage, []byte("x")); err == nil {
		t.Fatal("AppendFrame after Abort succeeded")
	}
	if _, err := other.Write([]byte{0x88, 0}); err == nil {
		t.Fatal("Write after Abort succeeded")
	}
}

// TestAbortRace: Abort racing a writer that sets its deadline never
// leaves the writer waiting out its full timeout: either the writer sees
// the mark, or Abort's past deadline comes after the writer's.
func TestAbortRace(t *testing.T) {
	for i := range 200 {
		o, _ := tcpPair(t) // the peer never reads: a write of 4 MiB waits
		c := newConn(o, false, 10*time.Second)
		done := make(chan error, 1)
		go func() {
			big := make([]byte, 4<<20)
			for {
				if err := c.AppendFrame(websocket.BinaryMessage, big); err != nil {
					done <- err
					return
				}
			}
		}()
		if i%2 == 0 {
			time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
		}
		c.Abort()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatalf("round %d: a write outlived abort", i)
		}
	}
}

// TestIdleDoesNotCostTheReadDeadline: the time the idle hook takes does
// not count against the read deadline (beforeRead runs again after it),
// and bytes that arrived while it ran are read even if the deadline
// passed meanwhile.
func TestIdleDoesNotCostTheReadDeadline(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fixed   bool          // beforeRead sets the deadline once, not from now
		writeAt time.Duration // when the peer's bytes arrive
	}{
		{"deadline from after idle", false, 400 * time.Millisecond},
		{"arrived while idle ran", true, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tcpPair(t)
			fc := newConn(a, false, 5*time.Second)
			start := time.Now()
			set, idled := false, false
			fc.SetHooks(Hooks{
				BeforeRead: func() {
					if !tt.fixed || !set {
						_ = a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
						set = true
					}
				},
				Idle: func() {
					if !idled {
						idled = true
						time.Sleep(300 * time.Millisecond)
					}
				},
			})
			time.AfterFunc(tt.writeAt, func() { _, _ = b.Write([]byte("hello")) })
			if err := fc.Fill(); err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
			if got := string(fc.Buffered()); got != "hello" {
				t.Fatalf("read %q", got)
			}
		})
	}
}

// TestControlWriteAfterBatch: a control frame written with a short
// deadline (gorilla's pong, 1 s) behind a batch is written within the
// batch's deadline (WriteTimeout): a peer slower than the control
// deadline to take the batch does not fail the connection.
func TestControlWriteAfterBatch(t *testing.T) {
	a, b := net.Pipe() // unbuffered: a write waits for the peer's read
	defer a.Close()
	defer b.Close()
	fc := newConn(a, true, 5*time.Second)
	if err := fc.AppendFrame(websocket.TextMessage, payloadOf(0, 1000)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // slower than the control deadline
		br := bufio.NewReader(b)
		defer func() { _, _ = io.Copy(io.Discard, br) }()
		for i, want := range []byte{websocket.TextMessage, websocket.PongMessage} {
			op, _, err := readClientFrame(br)
			if err == nil && op != want {
				err = fmt.Errorf("opcode %d, want %d", op, want)
			}
			if err != nil {
				got <- fmt.Errorf("frame %d: %w", i, err)
				return
			}
		}
		got <- nil
	}()
	_ = fc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := fc.Write([]byte{FinalBit | websocket.PongMessage, MaskBit, 0, 0, 0, 0}); err != nil {
		t.Fatalf("the pong behind the batch: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := fc.AppendFrame(websocket.TextMessage, []byte("after")); err != nil {
		t.Fatalf("a write after the pong: %v", err)
	}
}

// TestEagerIdle: on an eager connection idle runs before the read that
// follows a short read (with bytes waiting, a plain connection would not
// run it at all), once per fill (not again when that read finds nothing),
// and not after a read that filled the buffer; on a plain connection only
// a dry socket runs it.
func TestEagerIdle(t *testing.T) {
	for _, eager := range []bool{true, false} {
		a, b := tcpPair(t)
		fc := newConn(a, false, 5*time.Second)
		var idles atomic.Int32
		fc.SetHooks(Hooks{Idle: func() { idles.Add(1) }, Eager: eager})
		send := func(n int) {
			t.Helper()
			if _, err := b.Write(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // all of it in a's receive queue
		}
		fill := func() int {
			t.Helper()
			if err := fc.Fill(); err != nil {
				t.Fatal(err)
			}
			n := len(fc.Buffered())
			fc.Consume(n)
			return n
		}
		check := func(step string, want int32) {
			t.Helper()
			if !eager {
				want = map[string]int32{"short": 0, "after a short read": 0, "dry": 1, "after a full read": 1}[step]
			}
			if got := idles.Load(); got != want {
				t.Fatalf("eager %v, %s: idle ran %d times, want %d", eager, step, got, want)
			}
		}
		send(100)
		fill()
		check("short", 0)
		send(50)
		fill()
		check("after a short read", 1) // before the read: the socket had bytes
		got := make(chan int)
		go func() { got <- fill() }()
		time.Sleep(50 * time.Millisecond) // the fill waits on a dry socket
		send(10)
		if n := <-got; n != 10 {
			t.Fatalf("eager %v: read %d bytes, want 10", eager, n)
		}
		check("dry", 2) // before the read, and not again when it found nothing
		send(readChunk + 100)
		for total := 0; total < readChunk+100; {
			total += fill()
		}
		check("after a full read", 3) // before the first read only
	}
}

// TestLargeMaskedFrames: the backend leg's frames larger than a batch are
// masked a chunk at a time (writeMaskedLocked); the peer unmasks each to
// what was sent, the key carried across chunks whatever their sizes, and
// in order with the batched frames around them. Writing them makes no
// garbage of their size: a megabyte frame allocates far less than a copy.
func TestLargeMaskedFrames(t *testing.T) {
	a, b := tcpPair(t)
	fc := newConn(a, true, 5*time.Second)
	sizes := []int{10, BatchBytes - 100, BatchBytes, BatchBytes + 1, BatchBytes + 13, 3*BatchBytes + 5, 20, 1<<20 + 3}
	sent := make([][]byte, len(sizes))
	for i, n := range sizes {
		sent[i] = make([]byte, n)
		for j := range sent[i] {
			sent[i][j] = byte(j*7 + i + j>>8)
		}
	}
	got := make(chan error, 1)
	go func() {
		br := bufio.NewReader(b)
		for i, want := range sent {
			op, p, err := readClientFrame(br)
			if err == nil && (op != websocket.TextMessage || !bytes.Equal(p, want)) {
				err = fmt.Errorf("opcode %d, %d bytes, differ from the %d sent", op, len(p), len(want))
			}
			if err != nil {
				got <- fmt.Errorf("frame %d: %w", i, err)
				return
			}
		}
		got <- nil
		_, _ = io.Copy(io.Discard, br)
	}()
	for _, p := range sent {
		if err := fc.AppendFrame(websocket.TextMessage, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := fc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	big := sent[len(sent)-1]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const writes = 20
	for range writes {
		if err := fc.AppendFrame(websocket.TextMessage, big); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / writes; per > uint64(len(big))/8 {
		t.Fatalf("%d bytes allocated per %d-byte frame", per, len(big))
	}
}
