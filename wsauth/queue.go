package wsauth

import (
	"sync"
	"sync/atomic"

	"github.com/gatehouse/gatehouse/wsauth/internal/wsframe"
)

// sendQueue is the client's send queue: a ring of outMsg, bounded by
// maxMsgs messages (Transport.SendQueue) and maxBytes bytes
// (Transport.SendQueueBytes; a single larger message passes when the queue is
// empty), holding no memory while empty (Trim).
//
// Its producers are the client reader (replies), the backend reader (the
// backend's messages), the supervisor and Shutdown (pushes, close
// markers). One goroutine at a time, the flusher (StartFlush to EndFlush),
// takes messages from it in order (Pop) and writes them to the client; it
// holds no lock while it writes. A producer that finds the queue full
// waits for a message to be taken (WaitForSpace). When to write, who
// flushes, and how long a producer may wait are the session's (relay.go):
// the queue only keeps the messages, the flusher's role and the bounds.
//
// mu guards all but held, which the client reader publishes (Hold) and
// Fits reads, and the bounds, set before the session starts.
type sendQueue struct {
	mu       sync.Mutex
	ring     []outMsg      // a power of two long, or nil
	head     int           // the first entry's index in ring
	entries  int           // the entries in ring
	msgs     int           // the messages in them (a batch holds several)
	bytes    int64         // their bytes
	flushing bool          // a goroutine is draining the queue: the flusher
	space    chan struct{} // closed when a message is taken; nil unless a producer waits

	// held is what the client reader holds beyond the queue, published
	// for Fits: its message buffer's room and the topic it keeps. A
	// client that sends large messages and reads nothing thus holds
	// maxBytes in all, not that and its messages too.
	held atomic.Int64

	maxMsgs  int   // the messages it holds at most
	maxBytes int64 // their bytes, with held
}

// outMsg is one message in the client's send queue: a frame, or a close.
type outMsg struct {
	typ     int
	data    []byte
	backend bool    // from the backend (counted as delivered)
	buf     *[]byte // data's pooled buffer (msgBufs; a wsframe batch buffer for a batch), or nil
	close   int     // non-zero: send this close code instead
	framed  int     // non-zero: data is this many backend messages, framed (handOff)

	compressed bool // data is the backend's message as it compressed it (passthrough.go)
}

// count is how many messages m is, for the queue's bound.
func (m *outMsg) count() int { return max(1, m.framed) }

// release gives back m's pooled buffer, if any.
func (m *outMsg) release() {
	switch {
	case m.buf == nil:
	case m.framed > 0:
		wsframe.PutBatch(m.buf)
	default:
		releaseBuf(m.buf)
	}
	m.buf = nil
}

// Push adds m at the queue's tail when it fits (Fits); ok is false when
// the queue is full. flushing says whether, at that moment, a flusher is
// at work: it then takes m, or makes room for it, without being told.
func (q *sendQueue) Push(m outMsg) (ok, flushing bool) {
	q.mu.Lock()
	ok = q.fits(&m)
	if ok {
		q.push(m)
	}
	flushing = q.flushing
	q.mu.Unlock()
	return ok, flushing
}

// Fits reports whether the queue has room for m now.
func (q *sendQueue) Fits(m *outMsg) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fits(m)
}

// fits reports whether the queue has room for m: a close marker needs a
// slot, a message a slot and its bytes (counted with what the client
// reader holds, held), a batch a slot for each of its messages and its
// bytes (an empty queue takes any batch). q.mu held.
func (q *sendQueue) fits(m *outMsg) bool {
	if q.msgs != 0 && q.msgs+m.count() > q.maxMsgs {
		return false
	}
	n := int64(len(m.data))
	return m.close != 0 || q.bytes == 0 || q.bytes+n+q.held.Load() <= q.maxBytes
}

// HasRoom reports whether the queue has room for n bytes more besides
// what it and the client reader (held) hold; an empty queue has room for
// anything. The client reader asks it before it reads a message, n being
// that message's reply at most (awaitRoom).
func (q *sendQueue) HasRoom(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes == 0 || q.bytes+q.held.Load()+n <= q.maxBytes
}

// push adds m at the queue's tail, growing the ring. q.mu held, and room
// for m.
func (q *sendQueue) push(m outMsg) {
	if q.entries == len(q.ring) {
		ring := make([]outMsg, max(8, 2*len(q.ring)))
		for i := range q.entries {
			ring[i] = q.ring[(q.head+i)&(len(q.ring)-1)]
		}
		q.ring, q.head = ring, 0
	}
	q.ring[(q.head+q.entries)&(len(q.ring)-1)] = m
	q.entries++
	q.msgs += m.count()
	q.bytes += int64(len(m.data))
}

// Pop takes the message at the queue's head and tells the producers
// waiting for room (WaitForSpace); false when the queue is empty. The
// flusher only.
func (q *sendQueue) Pop() (outMsg, bool) {
	q.mu.Lock()
	if q.entries == 0 {
		q.mu.Unlock()
		return outMsg{}, false
	}
	m := q.ring[q.head]
	q.ring[q.head] = outMsg{}
	q.head = (q.head + 1) & (len(q.ring) - 1)
	q.entries--
	q.msgs -= m.count()
	q.bytes -= int64(len(m.data))
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
	q.mu.Unlock()
	return m, true
}

// WaitForSpace is a channel closed when a message is next taken (Pop). A
// producer that found the queue full takes it, then tries again before it
// waits: a message taken between the two calls does not close it.
func (q *sendQueue) WaitForSpace() <-chan struct{} {
	q.mu.Lock()
	if q.space == nil {
		q.space = make(chan struct{})
	}
	space := q.space
	q.mu.Unlock()
	return space
}

// Len is how many messages the queue holds (a batch counts as its
// messages).
func (q *sendQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.msgs
}

// Hold publishes n, what the client reader holds beyond the queue (held).
// Client reader only.
func (q *sendQueue) Hold(n int64) {
	if n != q.held.Load() {
		q.held.Store(n)
	}
}

// StartFlush makes the caller the flusher; false when another goroutine
// is, or the queue is empty.
func (q *sendQueue) StartFlush() bool { return q.startFlush(false) }

// StartFlushEmpty makes the caller the flusher of an empty queue, so that
// it may write to the client what it holds past the queue (the backend
// reader's batch, writeBatch); false when the queue holds messages or
// another goroutine is the flusher.
func (q *sendQueue) StartFlushEmpty() bool { return q.startFlush(true) }

// startFlush makes the caller the flusher when nobody is and the queue is
// empty (empty) or holds messages (!empty).
func (q *sendQueue) startFlush(empty bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.flushing || (q.entries == 0) != empty {
		return false
	}
	q.flushing = true
	return true
}

// EndFlush ends the caller's turn as the flusher when the queue is empty;
// false, the caller still the flusher, when messages were queued
// meanwhile.
func (q *sendQueue) EndFlush() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.entries != 0 {
		return false
	}
	q.flushing = false
	return true
}

// Trim gives the ring back to the collector when the queue is empty: an
// idle session holds none, a busy one keeps its own.
func (q *sendQueue) Trim() {
	q.mu.Lock()
	if q.entries == 0 {
		q.ring, q.head = nil, 0
	}
	q.mu.Unlock()
}
