package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// RevokeAccessToken records the revocation of the access token jti that
// expires at exp. Revoking twice is not an error and keeps the first
// revocation.
func (s *Store) RevokeAccessToken(ctx context.Context, jti string, exp, now time.Time) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO revocations (jti, expires_at, revoked_at) VALUES (?, ?, ?)
		ON CONFLICT (jti) DO NOTHING`, jti, millis(exp), millis(now))
	if err != nil {
		return fmt.Errorf("revoking access token %q: %w", jti, err)
	}
	return nil
}

// Revocations lists the revoked access tokens that have not expired at now
// (an access token expiring at now has expired), oldest revocation first.
func (s *Store) Revocations(ctx context.Context, now time.Time) ([]store.Revocation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT jti, expires_at, revoked_at FROM revocations
		WHERE expires_at > ? ORDER BY revoked_at, jti`, millis(now))
	if err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	defer rows.Close()
	var revs []store.Revocation
	for rows.Next() {
		var (
			r            store.Revocation
			exp, revoked sql.NullInt64
		)
		if err := rows.Scan(&r.JTI, &exp, &revoked); err != nil {
			return nil, fmt.Errorf("listing revocations: %w", err)
		}
		r.ExpiresAt, r.RevokedAt = fromMillis(exp), fromMillis(revoked)
		revs = append(revs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	return revs, nil
}

// tokenRevokedQuery tells whether an access token's revocation is stored.
const tokenRevokedQuery = `SELECT EXISTS (SELECT 1 FROM revocations WHERE jti = ?)`

// AccessTokenRevoked reports whether the access token jti has been revoked,
// by RevokeAccessToken or with its family, and the revocation is still
// stored (DeleteExpired removes it once the token has expired).
func (s *Store) AccessTokenRevoked(ctx context.Context, jti string) (bool, error) {
	var revoked bool
	if err := s.q.tokenRevoked.QueryRowContext(ctx, jti).Scan(&revoked); err != nil {
		return false, fmt.Errorf("reading revocation of access token %q: %w", jti, err)
	}
	return revoked, nil
}

// DeleteExpired removes, in one transaction, what has expired at now: refresh
// families past their absolute expiry with their tokens and recorded access
// tokens, the records of expired access tokens, and the revocations of
// expired access tokens. It returns how many rows it removed. It also
// removes the stale failure counters (see deleteStaleCounters), which it
// does not count.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	n := millis(now)
	stmts := []struct {
		query string
		args  []any
	}{
		{`DELETE FROM refresh_tokens WHERE family_id IN
			(SELECT id FROM refresh_families WHERE expires_at <= ?)`, []any{n}},
		{`DELETE FROM family_access_tokens WHERE expires_at <= ? OR family_id IN
			(SELECT id FROM refresh_families WHERE expires_at <= ?)`, []any{n, n}},
		{`DELETE FROM refresh_families WHERE expires_at <= ?`, []any{n}},
		{`DELETE FROM revocations WHERE expires_at <= ?`, []any{n}},
	}
	var total int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Rows removed by ON DELETE CASCADE would not be counted, so the
		// dependent rows go first, each by its own statement.
		for _, st := range stmts {
			res, err := tx.ExecContext(ctx, st.query, st.args...)
			if err != nil {
				return err
			}
			c, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += c
		}
		return deleteStaleCounters(ctx, tx, now)
	})
	if err != nil {
		return 0, fmt.Errorf("deleting expired records: %w", err)
	}
	return total, nil
}
