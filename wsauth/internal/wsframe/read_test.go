package wsframe

import (
	"sync/atomic"
	"testing"
	"time"
)

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
