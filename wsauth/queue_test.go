package wsauth

import (
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// textMsg is a text message of n bytes, its first byte tag.
func textMsg(n int, tag byte) outMsg {
	m := outMsg{typ: websocket.TextMessage, data: make([]byte, n)}
	if n > 0 {
		m.data[0] = tag
	}
	return m
}

// mustPush pushes m and fails the test when it does not fit.
func mustPush(t *testing.T, q *sendQueue, m outMsg) {
	t.Helper()
	if ok, _ := q.Push(m); !ok {
		t.Fatalf("a %d-byte message (close %d, framed %d) did not fit: %d messages, %d bytes queued",
			len(m.data), m.close, m.framed, q.Len(), q.bytes)
	}
}

// TestQueueOrderAcrossGrowth: messages come out in the order they went in
// while the ring wraps and grows with its head anywhere in it, and Len
// counts a batch as its messages. It failed when the ring grew by copying
// from index 0 instead of from the head.
func TestQueueOrderAcrossGrowth(t *testing.T) {
	q := &sendQueue{maxMsgs: 1 << 10, maxBytes: 1 << 20}
	var next, want byte
	for round := range 40 {
		for range round%7 + 3 {
			mustPush(t, q, textMsg(1, next))
			next++
		}
		for range round%5 + 1 {
			m, ok := q.Pop()
			if !ok {
				break
			}
			if m.data[0] != want {
				t.Fatalf("round %d: popped message %d, want %d", round, m.data[0], want)
			}
			want++
		}
	}
	if q.Len() != int(next-want) {
		t.Fatalf("Len %d, want %d", q.Len(), next-want)
	}
	for {
		m, ok := q.Pop()
		if !ok {
			break
		}
		if m.data[0] != want {
			t.Fatalf("popped message %d, want %d", m.data[0], want)
		}
		want++
	}
	if want != next || q.Len() != 0 || q.bytes != 0 {
		t.Fatalf("popped up to %d of %d; Len %d, %d bytes left", want, next, q.Len(), q.bytes)
	}
	mustPush(t, q, outMsg{data: make([]byte, 10), framed: 5})
	if q.Len() != 5 {
		t.Fatalf("a batch of 5 messages: Len %d", q.Len())
	}
}

// TestQueueBounds: the queue holds maxMsgs messages (a batch counts as its
// messages, a close marker as one) and maxBytes bytes, but an empty queue
// takes any message or batch, and a close marker needs no bytes. It
// failed when a batch counted as one message.
func TestQueueBounds(t *testing.T) {
	closeMarker := outMsg{close: websocket.CloseGoingAway}
	t.Run("messages", func(t *testing.T) {
		q := &sendQueue{maxMsgs: 4, maxBytes: 1 << 20}
		mustPush(t, q, outMsg{data: make([]byte, 100), framed: 10}) // an empty queue takes any batch
		if q.Fits(&closeMarker) {
			t.Fatal("a close marker fits a full queue")
		}
		q.Pop()
		mustPush(t, q, textMsg(1, 0))
		mustPush(t, q, outMsg{data: make([]byte, 10), framed: 2})
		if q.Fits(&outMsg{data: make([]byte, 10), framed: 2}) {
			t.Fatal("a batch of 2 fits behind 3 messages of 4")
		}
		mustPush(t, q, closeMarker)
		if ok, _ := q.Push(textMsg(1, 0)); ok {
			t.Fatal("a fifth message was queued")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		q := &sendQueue{maxMsgs: 256, maxBytes: 100}
		mustPush(t, q, textMsg(5000, 0)) // an empty queue takes any message
		q.Pop()
		mustPush(t, q, textMsg(60, 0))
		if ok, _ := q.Push(textMsg(41, 0)); ok {
			t.Fatal("101 bytes queued, bound 100")
		}
		mustPush(t, q, textMsg(40, 0))
		mustPush(t, q, closeMarker)
	})
}

// TestQueueCountsWhatTheReaderHolds: the client's send queue counts, with
// its own bytes, what the client reader holds (its message buffer and the
// topic it keeps), so a client that sends large messages and reads
// nothing holds SendQueueBytes in all; an empty queue still takes any
// message, and a close marker always fits. HasRoom, which the client
// reader asks before it reads, counts alike.
func TestQueueCountsWhatTheReaderHolds(t *testing.T) {
	q := &sendQueue{maxMsgs: 256, maxBytes: 1000}
	msg := func(n int) *outMsg { return &outMsg{typ: websocket.TextMessage, data: make([]byte, n)} }
	q.Hold(900)
	if !q.Fits(msg(5000)) {
		t.Fatal("an empty queue refused a message")
	}
	if !q.HasRoom(5000) {
		t.Fatal("an empty queue had no room")
	}
	mustPush(t, q, *msg(50))
	for _, tc := range []struct {
		held, n int64
		fits    bool
	}{{0, 950, true}, {0, 951, false}, {600, 350, true}, {600, 351, false}, {950, 1, false}} {
		q.Hold(tc.held)
		if got := q.Fits(msg(int(tc.n))); got != tc.fits {
			t.Errorf("queued 50, held %d: a %d-byte message fits %v, want %v", tc.held, tc.n, got, tc.fits)
		}
		if got := q.HasRoom(tc.n); got != tc.fits {
			t.Errorf("queued 50, held %d: room for %d bytes %v, want %v", tc.held, tc.n, got, tc.fits)
		}
	}
	if !q.Fits(&outMsg{close: websocket.CloseGoingAway}) {
		t.Error("a close marker did not fit")
	}
}

// TestQueueWaitForSpace: the channel WaitForSpace gives is closed by the
// next Pop and not before, and every producer waiting gets the same one.
// It failed when Pop did not close it.
func TestQueueWaitForSpace(t *testing.T) {
	q := &sendQueue{maxMsgs: 1, maxBytes: 1 << 20}
	mustPush(t, q, textMsg(1, 0))
	space := q.WaitForSpace()
	if q.WaitForSpace() != space {
		t.Fatal("a second producer waits on another channel")
	}
	select {
	case <-space:
		t.Fatal("space was signalled before a message was taken")
	default:
	}
	if _, ok := q.Pop(); !ok {
		t.Fatal("Pop found the queue empty")
	}
	select {
	case <-space:
	default:
		t.Fatal("space was not signalled when a message was taken")
	}
	if _, ok := q.Pop(); ok {
		t.Fatal("Pop took a message from an empty queue")
	}
	if next := q.WaitForSpace(); next == space {
		t.Fatal("the channel of a signalled space is given again")
	}
}

// TestQueueFlusher: one goroutine at a time is the flusher. StartFlush
// needs messages, StartFlushEmpty an empty queue; EndFlush ends the turn
// only once the queue is empty; Push says whether a flusher is at work.
// It failed when EndFlush ended the turn with messages queued (a message
// pushed meanwhile then waited for the next producer).
func TestQueueFlusher(t *testing.T) {
	q := &sendQueue{maxMsgs: 8, maxBytes: 1 << 20}
	if q.StartFlush() {
		t.Fatal("StartFlush on an empty queue")
	}
	if _, flushing := q.Push(textMsg(1, 0)); flushing {
		t.Fatal("Push reports a flusher before any")
	}
	if q.StartFlushEmpty() {
		t.Fatal("StartFlushEmpty with a message queued")
	}
	if !q.StartFlush() {
		t.Fatal("StartFlush refused with a message queued and no flusher")
	}
	if q.StartFlush() || q.StartFlushEmpty() {
		t.Fatal("a second flusher")
	}
	if _, flushing := q.Push(textMsg(1, 1)); !flushing {
		t.Fatal("Push does not report the flusher")
	}
	q.Pop()
	if q.EndFlush() {
		t.Fatal("EndFlush ended the turn with a message queued")
	}
	q.Pop()
	if !q.EndFlush() {
		t.Fatal("EndFlush kept the turn of an empty queue")
	}
	if !q.StartFlushEmpty() {
		t.Fatal("StartFlushEmpty refused on an empty queue without a flusher")
	}
	if q.StartFlush() {
		t.Fatal("a second flusher")
	}
	if !q.EndFlush() {
		t.Fatal("EndFlush kept the turn of an empty queue")
	}
}

// TestQueueTrim: Trim lets an empty queue's ring go, and leaves a queue
// with messages as it is.
func TestQueueTrim(t *testing.T) {
	q := &sendQueue{maxMsgs: 8, maxBytes: 1 << 20}
	mustPush(t, q, textMsg(1, 7))
	q.Trim()
	if m, ok := q.Pop(); !ok || m.data[0] != 7 {
		t.Fatal("Trim lost a queued message")
	}
	q.Trim()
	if q.ring != nil {
		t.Fatalf("an empty queue kept a ring of %d", len(q.ring))
	}
	mustPush(t, q, textMsg(1, 8))
	if m, ok := q.Pop(); !ok || m.data[0] != 8 {
		t.Fatal("a trimmed queue lost its message")
	}
}

// TestQueueProducersAndFlusher: producers that register with WaitForSpace
// and try again before waiting, as put does, and a flusher taking turns
// as drain does, through a queue much smaller than what goes through it:
// every message arrives once, each producer's in its order, and no
// producer waits for good (a lost wake-up). Run it with -race.
func TestQueueProducersAndFlusher(t *testing.T) {
	const producers, each = 4, 2000
	q := &sendQueue{maxMsgs: 3, maxBytes: 1 << 20}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := outMsg{typ: websocket.TextMessage, data: []byte{byte(p), byte(i), byte(i >> 8)}}
				var space <-chan struct{}
				for {
					if ok, _ := q.Push(m); ok {
						break
					}
					if space == nil {
						space = q.WaitForSpace()
						continue
					}
					select {
					case <-space:
						space = nil
					case <-time.After(10 * time.Second):
						t.Errorf("producer %d waited for good at message %d", p, i)
						return
					}
				}
			}
		}()
	}
	next := make([]int, producers)
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; got < producers*each; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages taken", got, producers*each)
		}
		if !q.StartFlush() {
			time.Sleep(time.Microsecond)
			continue
		}
		for {
			m, ok := q.Pop()
			if !ok {
				if q.EndFlush() {
					break
				}
				continue
			}
			p, i := int(m.data[0]), int(m.data[1])|int(m.data[2])<<8
			if i != next[p] {
				t.Fatalf("producer %d: message %d, want %d", p, i, next[p])
			}
			next[p]++
			got++
		}
	}
	wg.Wait()
	if q.Len() != 0 {
		t.Fatalf("%d messages left", q.Len())
	}
}
