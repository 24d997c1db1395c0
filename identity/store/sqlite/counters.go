package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// staleCounterAge is how long after its window began DeleteExpired removes
// a counter with no lock in force.
const staleCounterAge = 24 * time.Hour

// Admit counts one attempt against key at now, in one write transaction:
// BEGIN IMMEDIATE takes the write lock before the counter is read, so
// concurrent callers, in this process or in others, queue and none loses an
// increment or passes a lock. A locked key changes nothing. A window that
// began window or longer before now is replaced by one beginning at now;
// the key is locked until now+lockout when the count reaches limit (or is
// past it). A lock outlives the window it was set in. Times are kept to the
// millisecond: now is truncated to a whole millisecond before it is
// compared.
func (s *Store) Admit(ctx context.Context, key string, now time.Time, window time.Duration, limit int, lockout time.Duration) (store.Counter, bool, error) {
	var (
		c        store.Counter
		admitted bool
	)
	now = fromMillis(millis(now))
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if c, err = readCounterTx(ctx, tx, key); err != nil {
			return err
		}
		if c.Locked(now) {
			admitted = false
			return nil
		}
		admitted = true
		c = addAttempt(c, now, window, limit, lockout)
		return writeCounterTx(ctx, tx, c)
	})
	if err != nil {
		return store.Counter{}, false, fmt.Errorf("counting an attempt against %q: %w", key, err)
	}
	c.LockedUntil = fromMillis(millis(c.LockedUntil)) // as stored
	return c, admitted, nil
}

// addAttempt is c after one more attempt at now.
func addAttempt(c store.Counter, now time.Time, window time.Duration, limit int, lockout time.Duration) store.Counter {
	if c.WindowStart.IsZero() || now.Sub(c.WindowStart) >= window {
		c.Count, c.WindowStart = 0, now
	}
	c.Count++
	if c.Count >= limit {
		c.LockedUntil = now.Add(lockout)
	}
	return c
}

// Refund takes back one admitted attempt, in one write transaction (see
// store.Counters).
func (s *Store) Refund(ctx context.Context, key string, admitted store.Counter, limit int) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		c, err := readCounterTx(ctx, tx, key)
		if err != nil {
			return err
		}
		if c.WindowStart.IsZero() || millis(c.WindowStart) != millis(admitted.WindowStart) || c.Count == 0 {
			return nil
		}
		c.Count--
		ownLock := admitted.Count >= limit && millis(c.LockedUntil) == millis(admitted.LockedUntil)
		if c.Count < limit || ownLock {
			c.LockedUntil = time.Time{}
		}
		return writeCounterTx(ctx, tx, c)
	})
	if err != nil {
		return fmt.Errorf("refunding an attempt against %q: %w", key, err)
	}
	return nil
}

func readCounterTx(ctx context.Context, tx *sql.Tx, key string) (store.Counter, error) {
	return scanCounter(key, tx.QueryRowContext(ctx, `SELECT failures, window_start, locked_until
		FROM failure_counters WHERE counter_key = ?`, key))
}

func writeCounterTx(ctx context.Context, tx *sql.Tx, c store.Counter) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO failure_counters (counter_key, failures, window_start, locked_until)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (counter_key) DO UPDATE SET failures = excluded.failures,
			window_start = excluded.window_start, locked_until = excluded.locked_until`,
		c.Key, c.Count, millis(c.WindowStart), millis(c.LockedUntil))
	return err
}

// Counter returns the counter of key; a zero Counter with Key set if there
// is none.
func (s *Store) Counter(ctx context.Context, key string) (store.Counter, error) {
	c, err := scanCounter(key, s.r.QueryRowContext(ctx, `SELECT failures, window_start, locked_until
		FROM failure_counters WHERE counter_key = ?`, key))
	if err != nil {
		return store.Counter{}, fmt.Errorf("reading failure counter %q: %w", key, err)
	}
	return c, nil
}

// ResetCounter removes the counter of key, and with it any lock. Removing a
// missing counter is not an error.
func (s *Store) ResetCounter(ctx context.Context, key string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM failure_counters WHERE counter_key = ?`, key); err != nil {
		return fmt.Errorf("resetting failure counter %q: %w", key, err)
	}
	return nil
}

// deleteStaleCounters removes, within DeleteExpired's transaction, the
// counters with no lock in force at now whose window began staleCounterAge
// or longer before now.
func deleteStaleCounters(ctx context.Context, tx *sql.Tx, now time.Time) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM failure_counters
		WHERE window_start <= ? AND (locked_until IS NULL OR locked_until <= ?)`,
		millis(now.Add(-staleCounterAge)), millis(now))
	return err
}

// scanCounter reads failures, window_start and locked_until of the counter
// of key from row; a zero Counter with Key set if there is no row.
func scanCounter(key string, row *sql.Row) (store.Counter, error) {
	var (
		c             = store.Counter{Key: key}
		start, locked sql.NullInt64
	)
	err := row.Scan(&c.Count, &start, &locked)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return store.Counter{}, err
	}
	c.WindowStart, c.LockedUntil = fromMillis(start), fromMillis(locked)
	return c, nil
}
