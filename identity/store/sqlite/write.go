package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 32

// errClosed is the error of a write that reaches a closed Store.
var errClosed = errors.New("sqlite store is closed")

// A writeFn is the body of one write: it runs inside the write transaction
// tx, with ctx for its statements.
type writeFn func(ctx context.Context, tx *sql.Tx) error

// writeReq is one write on its way through the writer goroutine.
type writeReq struct {
	ctx   context.Context
	fn    writeFn
	state atomic.Int32 // reqQueued, then reqStarted (by the writer) or reqAbandoned (by the caller)
	err   chan error   // the outcome, sent once if the write was started; buffered
}

// States of a writeReq.
const (
	reqQueued int32 = iota
	reqStarted
	reqAbandoned
)

// write runs fn in a write transaction and returns once that transaction
// has committed, or with fn's error, fn's changes undone.
//
// The writes of all callers go through one goroutine (runWriter), which
// commits the writes waiting for it together, in one BEGIN IMMEDIATE
// transaction with one sync to disk (group commit). In a transaction of
// several writes, each runs inside a SAVEPOINT of its own, so a write that
// fails is rolled back alone; the writes run one after the other, in the
// order they arrived, each seeing those before it, as separate transactions
// would. So a compare-and-swap still has exactly one winner, and every
// caller gets its own error. A caller is answered only once its write has
// committed, or with the error that kept it from committing; if the
// transaction as a whole fails (an I/O error, a full disk), every write in
// it fails, and none is kept.
//
// A caller whose ctx ends before its write has started returns ctx's error,
// and its write never runs. Once started, a write is not interrupted (its
// transaction holds the others' writes too) and the caller waits for its
// outcome, which takes no longer than the statements and the commit: the
// write lock is already held by then.
func (s *Store) write(ctx context.Context, fn writeFn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn, err: make(chan error, 1)}
	select {
	case s.writes <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.writerDone:
		return errClosed
	}
	select {
	case err := <-req.err:
		return err
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-req.err // started: it ends soon
	}
}

// runWriter is the writer goroutine. It takes a write, lets the other
// goroutines run once, then takes the writes waiting by then, up to
// maxBatch, and commits them together; until s.stopWriter is closed.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case req := <-s.writes:
			batch = append(batch[:0], req)
		case <-s.stopWriter:
			return
		}
		// A commit waits for the disk, and the goroutine waiting keeps its
		// P (a CPU of GOMAXPROCS) idle until the runtime hands the P on, so
		// on a busy server every commit costs CPU time. Yielding first
		// lets the goroutines that are runnable, such as requests on their
		// way to a write, run and queue their writes, which then share
		// this commit. When nothing else is runnable, Gosched returns at
		// once and adds no delay.
		runtime.Gosched()
	more:
		for len(batch) < maxBatch {
			select {
			case req := <-s.writes:
				batch = append(batch, req)
			default:
				break more
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// commit runs the writes of batch that their callers have not abandoned in
// one transaction, and answers each of them.
func (s *Store) commit(batch []*writeReq) {
	var tx *sql.Tx
	var started []*writeReq
	answered := false
	// A panic in a write is contained: the transaction is rolled back, each
	// of its writes fails, and the writer goes on with the next batch.
	defer contain.Recover(nil, "store.sqlite.writer", func() {
		if tx != nil {
			_ = tx.Rollback()
		}
		if !answered {
			for _, req := range started {
				req.err <- errWritePanicked
			}
		}
	})
	contain.Point("store.sqlite.writer")
	// The transaction is bound to no caller's context: one caller going
	// away must not roll back the others' writes.
	tx, txErr := s.w.BeginTx(context.Background(), nil)
	// Writes are started once the write lock is held: until then (BEGIN
	// IMMEDIATE may wait for another process) their callers may give up.
	started = batch[:0]
	for _, req := range batch {
		if req.state.CompareAndSwap(reqQueued, reqStarted) {
			started = append(started, req)
		}
	}
	errs := make([]error, len(started)) // each write's own error
	switch {
	case txErr != nil:
	case len(started) == 1:
		// Alone in its transaction, a write needs no savepoint.
		errs[0] = started[0].fn(context.WithoutCancel(started[0].ctx), tx)
		txErr = errs[0]
	default:
		for i, req := range started {
			if errs[i], txErr = s.runSavepoint(context.WithoutCancel(req.ctx), tx, req.fn); txErr != nil {
				break
			}
		}
	}
	if txErr == nil {
		txErr = tx.Commit()
	} else if tx != nil {
		_ = tx.Rollback()
	}
	answered = true
	for i, req := range started {
		err := errs[i]
		if err == nil {
			err = txErr // the transaction failed: the write is lost with it
		}
		req.err <- err
	}
}

// errWritePanicked fails the writes of a transaction in which a write
// panicked: it was rolled back.
var errWritePanicked = errors.New("sqlite store: a write panicked; its transaction was rolled back")

// runSavepoint runs fn inside a savepoint of tx. fnErr is fn's error; fn's
// changes are then rolled back. txErr is an error that leaves tx unusable:
// the savepoint could not be set, released or rolled back to (SQLite may
// have rolled back the whole transaction).
func (s *Store) runSavepoint(ctx context.Context, tx *sql.Tx, fn writeFn) (fnErr, txErr error) {
	if _, err := tx.StmtContext(ctx, s.q.savepoint).ExecContext(ctx); err != nil {
		return nil, fmt.Errorf("setting savepoint: %w", err)
	}
	if fnErr = fn(ctx, tx); fnErr != nil {
		if _, err := tx.StmtContext(ctx, s.q.rollbackTo).ExecContext(ctx); err != nil {
			return fnErr, fmt.Errorf("rolling back to savepoint after %w: %w", fnErr, err)
		}
	}
	if _, err := tx.StmtContext(ctx, s.q.release).ExecContext(ctx); err != nil {
		return fnErr, fmt.Errorf("releasing savepoint: %w", err)
	}
	return fnErr, nil
}
