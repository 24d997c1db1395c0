package wsframe

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The tests' Conns panic on a read buffer given back that is not one.
func init() { StrictPools = true }

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
