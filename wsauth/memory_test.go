package wsauth

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// heapInUse is the heap in use after a collection, signed so that deltas
// may go below zero (what an earlier test held being freed).
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestUnreadSessionsHoldLittleHeap: one low-privilege token
// opens 64 sockets, asks each for a burst of market data (one message,
// within the rate limit) and reads nothing. The backend reader
// writes to the client itself and stops reading the backend while the
// client's socket is full, so a session that is not read holds little
// heap (50 to 150 KiB each here; the backlog sits in the kernel's socket
// buffers and the backend's), not SendQueueBytes (4 MiB) each. The test
// bounds the heap of 64 such sessions at 64 MiB.
func TestUnreadSessionsHoldLittleHeap(t *testing.T) {
	e := newTestEnv(t, nil) // DefaultSendQueueBytes, DefaultWriteTimeout
	heap0 := heapInUse()
	const n = 64
	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			d := &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, HandshakeTimeout: 5 * time.Second,
				ReadBufferSize: 1024, WriteBufferSize: 1024}
			c, _, err := e.tryDial(bearer(tokDemo), d)
			if err != nil {
				return
			}
			conns[i] = c
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"Blast","Data":100000}`))
		})
	}
	wg.Wait()
	var peak int64
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		peak = max(peak, heapInUse()-heap0)
	}
	opened := 0
	for _, c := range conns {
		if c != nil {
			opened++
		}
	}
	slow := e.metrics.get(func(m *fakeMetrics) int { return m.slow })
	t.Logf("one token, %d sockets not reading: peak gateway+backend heap %d MiB (%d KiB per session), %d counted slow so far",
		opened, peak>>20, (peak>>10)/int64(max(opened, 1)), slow)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	if peak > 64<<20 {
		t.Errorf("one user's %d non-reading sessions pinned %d MiB: no per-user bound on sessions or their queued bytes", opened, peak>>20)
	}
}
