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

	"go.uber.org/zap"
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
	// Sink writes each record, in chain order; a BatchSink takes the
	// records of concurrent appends in one write. Required.
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
	// OnCheckpoint receives each checkpoint written (and synced, when the
	// sink is a Syncer), for the store. It is called with the writer's
	// flush lock held: it must not call the writer.
	OnCheckpoint func(Checkpoint)
	// OnWriteFailure receives each failed write (one for a batch) and the
	// count of failures so far, to be logged and counted. Called with the
	// flush lock held.
	OnWriteFailure func(err error, failures uint64)
	// RefuseWhenFailing says that while the last write failed, callers
	// should refuse new sessions, logins and tokens (see Refusing);
	// otherwise they go on unaudited. Default false: go on.
	RefuseWhenFailing bool
	// FlushDelay, when positive, makes Append return once its record is
	// queued, and a flush that starts FlushDelay after the first record of
	// an empty queue write the queue (delay.go): the records of a delay
	// share one write, and a crash loses the records not yet written.
	// Default 0: each Append returns after its record's write.
	FlushDelay time.Duration
	// Logger logs what a delayed flush's goroutine recovers from. Default:
	// none.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Writer is the one sequencer of a run: it gives each record its seq, prev
// and hash and writes it to the sink, one flush at a time, so the sink's
// order is the chain's. Appends that come while a write is under way
// queue, and the next flush writes them together, one sink write (a batch
// line) for all: group commit. Each Append still returns after its record
// is written. A write that fails is not part of the chain: the next
// records take its seqs, after a loss record saying how many were lost.
type Writer struct {
	opts  Options
	batch BatchSink // the sink, when it writes batches

	mu      sync.Mutex // guards queue, leading, closed, and the pending records' outcomes
	queue   []*pending // appended, not yet taken by a flush, in time order
	leading bool       // an Append leads: it flushes, then hands the lead on
	closed  bool

	flushArmed bool // a delayed flush is due or under way (FlushDelay, delay.go); guarded by mu

	// flushMu makes one flush at a time; its holder owns what follows.
	flushMu        sync.Mutex
	seq            uint64 // the last record written
	hash           [32]byte
	lastCheckpoint time.Time
	uncovered      int        // records written after the last checkpoint
	lost           uint64     // caller records not written since the last one written
	taken          []*pending // the batch being flushed
	recs           []*Record  // the records of the write being made

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
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	w := &Writer{opts: opts}
	w.batch, _ = opts.Sink.(BatchSink)
	if opts.Previous != nil {
		w.hash = opts.Previous.Hash
	}
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.lastCheckpoint = w.now()
	_ = w.write(nil, false, false) // the run's first record; counted, and retried by the next write
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
// interval has passed, and returns once the record is written. It returns
// an error wrapping ErrAttr for refused attributes, ErrClosed after Close,
// and ErrWrite when the sink failed (the record is lost and counted).
//
// The record takes its time as it queues. A caller that finds no leader
// (no write under way or about to be) leads: it writes the queue and hands
// the lead on to the first record queued meanwhile. The others wait for
// their record's flush, or for the lead. There is no delay: a record that
// finds no leader is written at once, alone.
func (w *Writer) Append(kind Kind, attrs ...Attr) error {
	if kind == "" || slices.Contains(reserved, kind) {
		return fmt.Errorf("record kind %q: %w", kind, ErrAttr)
	}
	as, err := prepareAttrs(attrs)
	if err != nil {
		return err
	}
	p := &pending{rec: Record{Kind: kind, Attrs: as}, size: recordSize(as)}
	if w.opts.FlushDelay > 0 {
		return w.appendDelayed(p)
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	p.rec.Time = w.now()
	w.queue = append(w.queue, p)
	lead := !w.leading
	if !lead {
		// Only a caller that waits needs waking. A leader's record is
		// the queue's first: none queues while no one leads.
		p.wake = make(chan struct{}, 1)
	}
	w.leading = true
	w.mu.Unlock()
	if !lead {
		// Woken when a flush settled the record, or to lead. A caller
		// whose record is written returns without the flush lock, which
		// the next leader may hold for its whole write.
		<-p.wake
		w.mu.Lock()
		done, err := p.done, p.err
		w.mu.Unlock()
		if done {
			return err
		}
	}
	w.flushMu.Lock()
	for !p.done {
		w.flush()
	}
	w.flushMu.Unlock()
	w.mu.Lock()
	if len(w.queue) > 0 {
		w.queue[0].signal() // the lead passes on, leading stays set
	} else {
		w.leading = false
	}
	w.mu.Unlock()
	return p.err
}

// Checkpoint signs and writes a checkpoint now, unless the last record is
// one already.
func (w *Writer) Checkpoint() error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	w.flushQueued() // records queued under a FlushDelay go before it
	if w.seq > 0 && w.uncovered == 0 {
		return nil
	}
	return w.write(nil, true, false)
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

// Close writes the records still queued, then the run's final checkpoint
// (its JWS says final: a record after it can only have been inserted),
// and closes the writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true // no record queues after this
	w.mu.Unlock()
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.flushQueued()
	return w.write(nil, true, true)
}

func (w *Writer) now() time.Time { return w.opts.Now().UTC().Round(0) }
