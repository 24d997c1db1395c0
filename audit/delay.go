package audit

import (
	"fmt"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// A writer with a FlushDelay does not make an Append wait for its write:
// the record queues, and a flush that starts FlushDelay after the first
// record of an empty queue writes everything queued by then, one batch
// line at a time, and goes on while records keep coming. Under load the
// records of a whole delay share one write (a query service writes one
// record per query: the write, not the record, was its cost); a crash
// loses what was queued and not yet written (at most the delay's records
// and one write's), a cut tail as any crash leaves. An Append that finds
// maxDelayed records queued writes them itself and returns after its own
// write: memory stays bounded when the sink is slower than the callers.

// maxDelayed bounds the records queued under a FlushDelay (a variable for
// the tests).
var maxDelayed = 8192

// appendDelayed queues p and returns at once, unless the queue is full:
// then it waits for p's write. The caller checked the record.
func (w *Writer) appendDelayed(p *pending) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	p.rec.Time = w.now()
	w.queue = append(w.queue, p)
	full := len(w.queue) > maxDelayed
	if !w.flushArmed {
		w.flushArmed = true
		contain.AfterFunc(w.opts.Logger, "audit.flush", w.opts.FlushDelay, w.flushDelayed)
	}
	w.mu.Unlock()
	if !full {
		return nil
	}
	// The sink is behind: this caller writes, as one without a delay
	// would, and so does every caller that finds the queue full.
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	for !w.settled(p) {
		w.flush()
	}
	return p.err
}

// settled reports whether p's write is over (p.err says how it went).
func (w *Writer) settled(p *pending) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.done
}

// flushDelayed writes the queue until it finds it empty, then disarms:
// the next Append arms a new flush. A panic (a sink's, a signer's) is a
// failed write: the records taken are lost and counted, the process goes
// on.
func (w *Writer) flushDelayed() {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			_ = w.failed(fmt.Errorf("audit flush panicked: %v", r))
			w.mu.Lock()
			w.flushArmed = false
			rearm := len(w.queue) > 0 && !w.closed
			if rearm {
				w.flushArmed = true
			}
			w.mu.Unlock()
			if rearm {
				contain.AfterFunc(w.opts.Logger, "audit.flush", w.opts.FlushDelay, w.flushDelayed)
			}
		}
	}()
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.flushArmed = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		w.flush()
	}
}

// Flush writes every record queued so far and returns the outcome of the
// last write: for a caller that must know its records are written before
// it acts (a change deleted from the store once it is in the chain). With
// no FlushDelay, every Append has written its record already.
func (w *Writer) Flush() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.flushQueued()
	if w.failing.Load() {
		return fmt.Errorf("%w: the last write failed", ErrWrite)
	}
	return nil
}
