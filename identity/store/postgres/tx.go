package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes the store tells apart.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
)

// maxTxAttempts bounds how often a transaction is tried.
const maxTxAttempts = 5

// txOptions are those of every transaction: READ COMMITTED, so that a
// statement waiting for a row that a concurrent transaction changed sees
// that change when it goes on (and its WHERE is checked again on it), and
// each statement sees what was committed before it began.
var txOptions = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// inTx runs fn in a transaction and commits it. A transaction that
// PostgreSQL rolled back for a deadlock or a serialization failure
// (writers that met in another order, such as a purge and a revocation of
// a subject's families) is run again, fn included, up to maxTxAttempts
// times: fn must start from scratch each time. Any other error, fn's
// included, rolls back and is returned; fn's changes are then undone.
//
// The outcome goes through the Store's health check, as every statement's
// does: an unreachable database fails with an error matching
// store.ErrUnavailable (after which the commit may or may not have
// happened).
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, s.pool.Pool, txOptions, fn)
		if err == nil || !retryable(err) || attempt == maxTxAttempts {
			return s.health.check(err)
		}
		// A short, random pause keeps the writers that met from meeting
		// again at once.
		pause := time.Duration(attempt) * time.Duration(1+rand.IntN(10)) * time.Millisecond
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retryable reports whether err is a rollback that PostgreSQL chose, after
// which the transaction may be run again.
func retryable(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	if !ok {
		return false
	}
	return pgErr.Code == codeSerializationFailure || pgErr.Code == codeDeadlockDetected
}

// isUnique reports whether err is the violation of a primary key or a
// unique constraint.
func isUnique(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pgErr.Code == codeUniqueViolation
}
