package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCheckpointInterval is how often a writer signs a checkpoint while
// records come in.
const DefaultCheckpointInterval = time.Minute

// Options configure a Writer.
type Options struct {
	// Instance names the instance writing: one chain of runs per
	// instance. Required.
	Instance string
	// Run names this run. Default: 128 random bits in hex.
	Run string
	// Sink writes each record, in chain order. Required.
	Sink Sink
	// Signer signs checkpoints with the audit key. Required.
	Signer Signer
	// Previous is this instance's previous run's last checkpoint (from
	// the store); the run's first record names it. Nil for an instance's
	// first run.
	Previous *Checkpoint
	// CheckpointInterval is the longest time records stay after the last
	// checkpoint, as Append and Run see it. Default one minute.
	CheckpointInterval time.Duration
	// OnCheckpoint receives each checkpoint written, for the store. It is
	// called with the writer's lock held: it must not call the writer.
	OnCheckpoint func(Checkpoint)
	// OnWriteFailure receives each failed write and the count of failures
	// so far, to be logged and counted. Called with the lock held.
	OnWriteFailure func(err error, failures uint64)
	// RefuseWhenFailing says that while the last write failed, callers
	// should refuse new sessions, logins and tokens (see Refusing);
	// otherwise they go on unaudited. Default false: go on.
	RefuseWhenFailing bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Writer is the one sequencer of a run: it gives each record its seq, prev
// and hash and writes it to the sink under one lock, so the sink's order
// is the chain's. A write that fails is not part of the chain: the next
// record takes its seq, after a loss record saying how many were lost.
type Writer struct {
	opts Options

	mu             sync.Mutex
	seq            uint64 // the last record written
	hash           [32]byte
	lastCheckpoint time.Time
	uncovered      int    // records written after the last checkpoint
	lost           uint64 // caller records not written since the last one written
	closed         bool

	failures atomic.Uint64
	failing  atomic.Bool
}

// NewWriter checks opts and starts a run: it writes the run's first
// record, which names opts.Previous. A failure to write it is counted
// (see Failures), and the record is written again before the next one.
func NewWriter(opts Options) (*Writer, error) {
	if opts.Instance == "" || opts.Sink == nil || opts.Signer == nil {
		return nil, errors.New("audit writer needs an instance, a sink and a signer")
	}
	if opts.Previous != nil && opts.Previous.Instance != opts.Instance {
		return nil, fmt.Errorf("audit writer of %q given a checkpoint of %q", opts.Instance, opts.Previous.Instance)
	}
	if opts.Run == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("reading randomness: %w", err)
		}
		opts.Run = hex.EncodeToString(b[:])
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Writer{opts: opts}
	if opts.Previous != nil {
		w.hash = opts.Previous.Hash
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastCheckpoint = w.now()
	_ = w.start() // counted; retried by the next Append
	return w, nil
}

// Run is this writer's run id.
func (w *Writer) Run() string { return w.opts.Run }

// Failures is the count of failed writes so far.
func (w *Writer) Failures() uint64 { return w.failures.Load() }

// Refusing reports whether callers should refuse new sessions, logins and
// tokens: RefuseWhenFailing is set and the last write failed.
func (w *Writer) Refusing() bool { return w.opts.RefuseWhenFailing && w.failing.Load() }

// reserved are the kinds only the writer writes.
var reserved = []Kind{KindRunStart, KindCheckpoint, KindLoss}

// Append writes one record of kind with attrs, then a checkpoint if the
// interval has passed. It returns an error wrapping ErrAttr for refused
// attributes, ErrClosed after Close, and ErrWrite when the sink failed
// (the record is lost and counted).
func (w *Writer) Append(kind Kind, attrs ...Attr) error {
	if kind == "" || slices.Contains(reserved, kind) {
		return fmt.Errorf("record kind %q: %w", kind, ErrAttr)
	}
	as, err := prepareAttrs(attrs)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if err := w.catchUp(); err != nil {
		w.lost++
		return err
	}
	if err := w.write(kind, as); err != nil {
		w.lost++
		return err
	}
	if w.now().Sub(w.lastCheckpoint) >= w.opts.CheckpointInterval {
		// The record is written; a failed checkpoint is counted and
		// reported, and the next append or tick tries again.
		_ = w.checkpoint()
	}
	return nil
}

// Checkpoint signs and writes a checkpoint now, unless the last record is
// one already.
func (w *Writer) Checkpoint() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.checkpointIfUncovered()
}

// RunCheckpoints writes a checkpoint each interval while records came in,
// until ctx is done, so that a quiet writer's last records do not stay
// unsigned. Start it with the goroutine helper (internal/contain).
func (w *Writer) RunCheckpoints(ctx context.Context) {
	t := time.NewTicker(w.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = w.Checkpoint() // a failure is counted and reported
		}
	}
}

// Close writes the run's final checkpoint (its JWS says final: a record
// after it can only have been inserted) and closes the writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.catchUp(); err != nil {
		return err
	}
	return w.checkpoint()
}

func (w *Writer) now() time.Time { return w.opts.Now().UTC().Round(0) }

// start writes the run's first record if it is not written yet.
func (w *Writer) start() error {
	if w.seq > 0 {
		return nil
	}
	var attrs []Attr
	if p := w.opts.Previous; p != nil {
		attrs = []Attr{String(AttrPrevRun, p.Run), Int(AttrPrevSeq, int64(p.Seq))}
	}
	return w.write(KindRunStart, attrs)
}

// catchUp writes what must come before a caller's record: the run's first
// record, and a loss record when records were lost.
func (w *Writer) catchUp() error {
	if err := w.start(); err != nil {
		return err
	}
	if w.lost == 0 {
		return nil
	}
	if err := w.write(KindLoss, []Attr{Int(AttrLost, int64(w.lost))}); err != nil {
		return err
	}
	w.lost = 0
	return nil
}

func (w *Writer) checkpointIfUncovered() error {
	if err := w.start(); err != nil {
		return err
	}
	if w.uncovered == 0 {
		return nil
	}
	return w.checkpoint()
}

func (w *Writer) checkpoint() error { return w.write(KindCheckpoint, nil) }

// write chains one record after the last one written and hands it to the
// sink; only a record written moves the chain on.
func (w *Writer) write(kind Kind, attrs []Attr) error {
	r := &Record{Instance: w.opts.Instance, Run: w.opts.Run, Seq: w.seq + 1, Prev: w.hash,
		Time: w.now(), Kind: kind, Attrs: attrs}
	r.Hash = ComputeHash(r)
	if kind == KindCheckpoint {
		jws, err := signCheckpoint(w.opts.Signer, r, w.closed)
		if err != nil {
			return w.failed(err)
		}
		r.JWS = jws
	}
	if err := w.opts.Sink.WriteRecord(r); err != nil {
		return w.failed(err)
	}
	w.failing.Store(false)
	w.seq, w.hash = r.Seq, r.Hash
	if kind != KindCheckpoint {
		w.uncovered++
		return nil
	}
	w.uncovered = 0
	w.lastCheckpoint = r.Time
	if w.opts.OnCheckpoint != nil {
		w.opts.OnCheckpoint(Checkpoint{Instance: r.Instance, Run: r.Run, Seq: r.Seq, Hash: r.Hash,
			Time: r.Time, KeyID: w.opts.Signer.KeyID(), Final: w.closed, JWS: r.JWS})
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
