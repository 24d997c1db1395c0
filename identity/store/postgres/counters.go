package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/identity/store"
)

// staleCounterAge is how long after its window began DeleteExpired removes
// a counter with no lock in force.
const staleCounterAge = 24 * time.Hour

// admitQuery counts one attempt against a key in one statement: $1 the
// key, $2 now, $3 now-window (a window that began then or earlier has run
// out), $4 the limit, $5 now+lockout. A new key starts a window at now
// with a count of 1. On an existing key, ON CONFLICT locks its row (a
// concurrent Admit on any instance waits for this one to commit, then
// works on the row as this one left it), and the update applies unless
// the key is locked at now: the count starts again from 1 in a new window
// at now when the window has run out, grows by one otherwise, and the key
// is locked until now+lockout when the new count is the limit or more (a
// window reset leaves an old lock as it was). Every SET expression reads
// the row as it was before the update. A locked key returns no row.
const admitQuery = `INSERT INTO failure_counters AS c (counter_key, failures, window_start, locked_until)
	VALUES ($1, 1, $2, CASE WHEN 1 >= $4::bigint THEN $5::timestamptz END)
	ON CONFLICT (counter_key) DO UPDATE SET
		failures = CASE WHEN c.window_start <= $3 THEN 1 ELSE c.failures + 1 END,
		window_start = CASE WHEN c.window_start <= $3 THEN $2 ELSE c.window_start END,
		locked_until = CASE WHEN (CASE WHEN c.window_start <= $3 THEN 1 ELSE c.failures + 1 END) >= $4::bigint
			THEN $5::timestamptz ELSE c.locked_until END
	WHERE c.locked_until IS NULL OR c.locked_until <= $2
	RETURNING failures, window_start, locked_until`

// Admit counts one attempt against key at now in one atomic statement
// (admitQuery): of concurrent callers, in this process or on other
// instances, none loses an increment or passes a lock. A locked key
// changes nothing, and the counter that locked it is returned. Times are
// kept to the millisecond: now, now-window and now+lockout are truncated
// to a whole millisecond (as the SQLite backend compares and stores them).
func (s *Store) Admit(ctx context.Context, key string, now time.Time, window time.Duration, limit int, lockout time.Duration) (store.Counter, bool, error) {
	c, err := scanCounter(key, s.pool.QueryRow(ctx, admitQuery,
		[]byte(key), ms(now), ms(ms(now).Add(-window)), limit, ms(ms(now).Add(lockout))))
	if err == nil {
		return c, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Counter{}, false, fmt.Errorf("counting an attempt against %q: %w", key, err)
	}
	// Locked: nothing changed.
	c, err = s.Counter(ctx, key)
	if err != nil {
		return store.Counter{}, false, fmt.Errorf("counting an attempt against %q: %w", key, err)
	}
	return c, false, nil
}

// Refund takes back one admitted attempt in one atomic statement (see
// store.Counters): if the key's window is still the one admitted began
// in and its count is above zero, the count drops by one, and the lock
// ends when the count falls below limit or when that attempt set it (its
// count was limit or more and the lock is still the one it returned).
func (s *Store) Refund(ctx context.Context, key string, admitted store.Counter, limit int) error {
	_, err := s.pool.Exec(ctx, `UPDATE failure_counters SET failures = failures - 1,
		locked_until = CASE WHEN failures - 1 < $3::bigint
			OR ($4::boolean AND locked_until IS NOT DISTINCT FROM $5::timestamptz) THEN NULL ELSE locked_until END
		WHERE counter_key = $1 AND window_start = $2 AND failures > 0`,
		[]byte(key), ts(admitted.WindowStart), limit, admitted.Count >= limit, ts(admitted.LockedUntil))
	if err != nil {
		return fmt.Errorf("refunding an attempt against %q: %w", key, err)
	}
	return nil
}

// Counter returns the counter of key; a zero Counter with Key set if there
// is none.
func (s *Store) Counter(ctx context.Context, key string) (store.Counter, error) {
	c, err := scanCounter(key, s.pool.QueryRow(ctx, `SELECT failures, window_start, locked_until
		FROM failure_counters WHERE counter_key = $1`, []byte(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Counter{Key: key}, nil
	}
	if err != nil {
		return store.Counter{}, fmt.Errorf("reading failure counter %q: %w", key, err)
	}
	return c, nil
}

// ResetCounter removes the counter of key, and with it any lock. Removing a
// missing counter is not an error.
func (s *Store) ResetCounter(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM failure_counters WHERE counter_key = $1`, []byte(key)); err != nil {
		return fmt.Errorf("resetting failure counter %q: %w", key, err)
	}
	return nil
}

// deleteStaleCounters removes, within DeleteExpired's transaction, the
// counters with no lock in force at now whose window began staleCounterAge
// or longer before now.
func deleteStaleCounters(ctx context.Context, tx pgx.Tx, now time.Time) error {
	_, err := tx.Exec(ctx, `DELETE FROM failure_counters
		WHERE window_start <= $1 AND (locked_until IS NULL OR locked_until <= $2)`,
		ms(now.Add(-staleCounterAge)), ms(now))
	return err
}

// scanCounter reads failures, window_start and locked_until of the counter
// of key from row.
func scanCounter(key string, row pgx.Row) (store.Counter, error) {
	var (
		c             = store.Counter{Key: key}
		start, locked pgtype.Timestamptz
	)
	if err := row.Scan(&c.Count, &start, &locked); err != nil {
		return store.Counter{}, err
	}
	c.WindowStart, c.LockedUntil = fromTS(start), fromTS(locked)
	return c, nil
}
