package audit

import (
	"fmt"
	"slices"
	"time"
)

// Bounds of one batch. A batch line must stay well under MaxLine, which
// the reader refuses; maxBatchBytes bounds the records' size as
// recordSize counts it, with every string escaped at its worst.
const (
	maxBatch      = 256
	maxBatchBytes = MaxLine / 2
)

// pending is a caller's record from its Append to its flush. A flush sets
// done and err under the writer's mutex, then wakes the caller.
type pending struct {
	rec  Record
	size int
	done bool
	err  error
	wake chan struct{} // one slot: settled, or the lead handed on; nil for a leader's
}

func (p *pending) signal() {
	select {
	case p.wake <- struct{}{}:
	default: // already woken (it reads its outcome under the mutex), or it leads
	}
}

// recordSize bounds the length of a record's line: its fixed members, and
// each attribute as if every byte were escaped (\u00XX).
func recordSize(as []Attr) int {
	n := 400
	for _, a := range as {
		n += len(a.Key) + 24 + 6*len(a.Value.s)
		for _, s := range a.Value.list {
			n += 3 + 6*len(s)
		}
	}
	return n
}

func (w *Writer) queued() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) > 0
}

// flushQueued writes every record queued. The caller holds the flush
// lock.
func (w *Writer) flushQueued() {
	for w.queued() {
		w.flush()
	}
}

// flush writes the oldest queued records, as many as a batch takes (one
// for a sink that does not write batches), with one sink write, and
// settles each: written, or ErrWrite and counted as lost. Then it writes a
// checkpoint if the interval has passed. The caller holds the flush lock.
func (w *Writer) flush() {
	w.mu.Lock()
	n, size := 1, w.queue[0].size
	for w.batch != nil && n < len(w.queue) && n < maxBatch && size+w.queue[n].size <= maxBatchBytes {
		size += w.queue[n].size
		n++
	}
	w.taken = append(w.taken[:0], w.queue[:n]...)
	m := copy(w.queue, w.queue[n:])
	clear(w.queue[m:]) // no pointer kept past its flush
	w.queue = w.queue[:m]
	w.mu.Unlock()

	err := w.write(w.taken, false, false)
	w.mu.Lock()
	for _, p := range w.taken {
		p.done, p.err = true, err
	}
	w.mu.Unlock()
	for _, p := range w.taken {
		p.signal()
	}
	clear(w.taken)
	if err != nil {
		w.lost += uint64(n)
		return
	}
	if w.now().Sub(w.lastCheckpoint) >= w.opts.CheckpointInterval {
		// The records are written; a failed checkpoint is counted and
		// reported, and the next flush or tick tries again.
		_ = w.write(nil, true, false)
	}
}

// write writes what is due before the callers' records (the run's first
// record if it is not written yet, a loss record if records were lost),
// the callers' records, and with checkpoint a checkpoint after them (final
// with final): one sink write, or one per record for a sink that does not
// write batches. The caller holds the flush lock.
func (w *Writer) write(callers []*pending, checkpoint, final bool) error {
	recs := w.recs[:0]
	defer func() { clear(recs); w.recs = recs[:0] }()
	var t = w.now
	if len(callers) > 0 {
		// What comes before a record is stamped with its time, so that
		// times never go back in chain order.
		first := callers[0].rec.Time
		t = func() time.Time { return first }
	}
	if w.seq == 0 {
		var attrs []Attr
		if p := w.opts.Previous; p != nil {
			attrs = []Attr{String(AttrPrevRun, p.Run), Int(AttrPrevSeq, int64(p.Seq))}
		}
		recs = append(recs, &Record{Kind: KindRunStart, Attrs: attrs})
	}
	if w.lost > 0 {
		recs = append(recs, &Record{Kind: KindLoss, Attrs: []Attr{Int(AttrLost, int64(w.lost))}})
	}
	for _, p := range callers {
		recs = append(recs, &p.rec)
	}
	if checkpoint {
		recs = append(recs, &Record{Kind: KindCheckpoint})
	}
	if len(recs) == 0 {
		return nil
	}
	tm := t()
	for _, r := range recs {
		if r.Time.IsZero() {
			r.Time = tm
		}
	}
	if w.batch != nil {
		return w.commit(recs, final)
	}
	for i := range recs {
		if err := w.commit(recs[i:i+1], final); err != nil {
			return err
		}
	}
	return nil
}

// commit chains recs after the last record written and hands them to the
// sink in one write; only a write that succeeds moves the chain on. A
// checkpoint, always last, is signed over its own hash, and after it is
// written the sink is synced and the checkpoint goes to OnCheckpoint.
func (w *Writer) commit(recs []*Record, final bool) error {
	seq, prev := w.seq, w.hash
	for _, r := range recs {
		seq++
		r.Instance, r.Run, r.Seq, r.Prev = w.opts.Instance, w.opts.Run, seq, prev
		r.Hash = ComputeHash(r)
		prev = r.Hash
	}
	last := recs[len(recs)-1]
	if last.Kind == KindCheckpoint {
		jws, err := signCheckpoint(w.opts.Signer, last, final)
		if err != nil {
			return w.failed(err)
		}
		last.JWS = jws
	}
	var err error
	if len(recs) == 1 {
		err = w.opts.Sink.WriteRecord(last)
	} else {
		err = w.batch.WriteRecords(recs)
	}
	if err != nil {
		return w.failed(err)
	}
	w.failing.Store(false)
	w.seq, w.hash = seq, prev
	if slices.ContainsFunc(recs, func(r *Record) bool { return r.Kind == KindLoss }) {
		w.lost = 0
	}
	if last.Kind != KindCheckpoint {
		w.uncovered += len(recs)
		return nil
	}
	w.uncovered = 0
	w.lastCheckpoint = last.Time
	if s, ok := w.opts.Sink.(Syncer); ok {
		// The checkpoint is in the chain; only the store waits for the
		// sync, so that it never names a line a power loss took back.
		if err := s.Sync(); err != nil {
			return w.failed(fmt.Errorf("syncing: %w", err))
		}
	}
	if w.opts.OnCheckpoint != nil {
		w.opts.OnCheckpoint(Checkpoint{Instance: last.Instance, Run: last.Run, Seq: last.Seq, Hash: last.Hash,
			Time: last.Time, KeyID: w.opts.Signer.KeyID(), Final: final, JWS: last.JWS})
	}
	return nil
}

func (w *Writer) failed(err error) error {
	n := w.failures.Add(1)
	w.failing.Store(true)
	if w.opts.OnWriteFailure != nil {
		w.opts.OnWriteFailure(err, n)
	}
	return fmt.Errorf("%w: %w", ErrWrite, err)
}
