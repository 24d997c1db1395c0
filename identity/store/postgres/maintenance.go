package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// deleteExpiredQueries are DeleteExpired's statements, each of which
// removes what has expired at $1. The rows that ON DELETE CASCADE would
// remove are not counted, so the dependent rows go first, each by a
// statement of its own.
var deleteExpiredQueries = []string{
	`DELETE FROM refresh_tokens WHERE family_id IN
		(SELECT id FROM refresh_families WHERE expires_at <= $1)`,
	`DELETE FROM family_access_tokens WHERE expires_at <= $1 OR family_id IN
		(SELECT id FROM refresh_families WHERE expires_at <= $1)`,
	`DELETE FROM refresh_families WHERE expires_at <= $1`,
	`DELETE FROM revocations WHERE expires_at <= $1`,
	`DELETE FROM family_revocations WHERE expires_at <= $1`,
	`DELETE FROM subject_revocations WHERE expires_at <= $1`,
	`DELETE FROM entitlement_revocations WHERE expires_at <= $1`,
}

// DeleteExpired removes, in one transaction, what has expired at now:
// refresh families past their absolute expiry with their legacy tokens and
// recorded access tokens, the records of expired access tokens, and the
// revocations whose tokens have all expired. It returns how many rows it
// removed. It also removes the stale failure counters (see
// deleteStaleCounters), which it does not count. Several instances may
// purge at once: a row one of them removed is not counted by the others.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		total = 0
		for _, q := range deleteExpiredQueries {
			tag, err := tx.Exec(ctx, q, ms(now))
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
		}
		return deleteStaleCounters(ctx, tx, now)
	})
	if err != nil {
		return 0, fmt.Errorf("deleting expired records: %w", err)
	}
	return total, nil
}
