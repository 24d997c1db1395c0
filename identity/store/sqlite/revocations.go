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

// RevokeSubject revokes, in one transaction, the subject's live families
// (with their revocations, as RevokeRefreshFamily records them), deletes
// its browser sessions, ends its codes (endSubjectCodesTx) and records the
// subject's not-before time. A later revocation of the same
// subject moves NotBefore and the expiry on, never back.
func (s *Store) RevokeSubject(ctx context.Context, subject string, now, tokensUntil time.Time) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return revokeSubjectTx(ctx, tx, subject, now, tokensUntil)
	})
	if err != nil {
		return fmt.Errorf("revoking the sessions of subject %q: %w", subject, err)
	}
	return nil
}

// revokeSubjectTx is RevokeSubject's work, in tx.
func revokeSubjectTx(ctx context.Context, tx *sql.Tx, subject string, now, tokensUntil time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = ?
		WHERE subject = ? AND revoked_at IS NULL`, millis(now), subject); err != nil {
		return err
	}
	if err := revokeFamiliesTx(ctx, tx, `f.subject = ?`, []any{subject}, now, tokensUntil); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE subject = ?`, subject); err != nil {
		return err
	}
	if err := endSubjectCodesTx(ctx, tx, subject, now); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO subject_revocations (subject, not_before, expires_at, revoked_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (subject) DO UPDATE SET not_before = max(not_before, excluded.not_before),
			expires_at = max(expires_at, excluded.expires_at), revoked_at = max(revoked_at, excluded.revoked_at)`,
		subject, millis(now), millis(tokensUntil), millis(now))
	return err
}

// endSubjectCodesTx ends what the subject authorized that has not yet
// given a token: its unused authorization codes go, and its approved
// device authorizations not yet used become denied (the device is told
// access_denied). The subject's revocation refuses them too, but only
// while it lasts (the access tokens' lifetime), which a device code may
// outlive, and a user enabled again, or added again with the subject,
// would then get tokens for an approval made before.
func endSubjectCodesTx(ctx context.Context, tx *sql.Tx, subject string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM auth_codes WHERE subject = ? AND used_at IS NULL`, subject); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE device_codes SET state = ?, decided_at = ?
		WHERE subject = ? AND state = ? AND used_at IS NULL`, store.DeviceDenied, millis(now), subject, store.DeviceApproved)
	return err
}

// revocationsQuery lists the four kinds of revocation revoked at ?1 or
// later and not expired at ?2, oldest revocation first; the last column
// is an entitlement change's set, NULL for the others.
const revocationsQuery = `SELECT jti, '', '', NULL, expires_at, revoked_at, NULL FROM revocations
		WHERE revoked_at >= ?1 AND expires_at > ?2
	UNION ALL SELECT '', family_id, '', NULL, expires_at, revoked_at, NULL FROM family_revocations
		WHERE revoked_at >= ?1 AND expires_at > ?2
	UNION ALL SELECT '', '', subject, not_before, expires_at, revoked_at, NULL FROM subject_revocations
		WHERE revoked_at >= ?1 AND expires_at > ?2
	UNION ALL SELECT '', '', subject, not_before, expires_at, revoked_at, entitlements FROM entitlement_revocations
		WHERE revoked_at >= ?1 AND expires_at > ?2
	ORDER BY 6, 1, 2, 3`

// Revocations lists the revocations that have not expired at now (one
// expiring at now has expired), oldest revocation first.
func (s *Store) Revocations(ctx context.Context, now time.Time) ([]store.Revocation, error) {
	return s.revocations(ctx, sql.NullInt64{Valid: true, Int64: -1 << 62}, now)
}

// RevocationsSince lists those revoked at since or later.
func (s *Store) RevocationsSince(ctx context.Context, since, now time.Time) ([]store.Revocation, error) {
	return s.revocations(ctx, sql.NullInt64{Valid: true, Int64: since.UnixMilli()}, now)
}

func (s *Store) revocations(ctx context.Context, since sql.NullInt64, now time.Time) ([]store.Revocation, error) {
	rows, err := s.r.QueryContext(ctx, revocationsQuery, since, millis(now))
	if err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	defer rows.Close()
	var revs []store.Revocation
	for rows.Next() {
		var (
			r                 store.Revocation
			nbf, exp, revoked sql.NullInt64
			pairs             sql.NullString
		)
		if err := rows.Scan(&r.JTI, &r.FamilyID, &r.Subject, &nbf, &exp, &revoked, &pairs); err != nil {
			return nil, fmt.Errorf("listing revocations: %w", err)
		}
		r.NotBefore, r.ExpiresAt, r.RevokedAt = fromMillis(nbf), fromMillis(exp), fromMillis(revoked)
		if pairs.Valid {
			var err error
			if r, err = changeRevocation(r.Subject, nbf, exp, revoked, pairs.String); err != nil {
				return nil, fmt.Errorf("listing revocations: %w", err)
			}
		}
		revs = append(revs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	return revs, nil
}

// tokenRevokedQuery tells whether an access token is revoked by its jti,
// its family or its subject (issued at ?4, before the subject's
// not-before time).
const tokenRevokedQuery = `SELECT EXISTS (SELECT 1 FROM revocations WHERE jti = ?1)
	OR EXISTS (SELECT 1 FROM family_revocations WHERE ?2 != '' AND family_id = ?2)
	OR EXISTS (SELECT 1 FROM subject_revocations WHERE subject = ?3 AND not_before > ?4)`

// AccessTokenRevoked reports whether an access token is revoked and the
// revocation still stored (DeleteExpired removes it once every token it
// covers has expired).
func (s *Store) AccessTokenRevoked(ctx context.Context, jti, familyID, subject string, iat time.Time) (bool, error) {
	var revoked bool
	if err := s.q.tokenRevoked.QueryRowContext(ctx, jti, familyID, subject, iat.UnixMilli()).Scan(&revoked); err != nil {
		return false, fmt.Errorf("reading revocation of access token %q: %w", jti, err)
	}
	return revoked, nil
}

// DeleteExpired removes, in one transaction, what has expired at now: refresh
// families past their absolute expiry with their legacy tokens and recorded
// access tokens, the records of expired access tokens, and the revocations
// whose tokens have all expired. It returns how many rows it removed. It
// also removes the stale failure counters (see deleteStaleCounters), which it
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
		{`DELETE FROM family_revocations WHERE expires_at <= ?`, []any{n}},
		{`DELETE FROM subject_revocations WHERE expires_at <= ?`, []any{n}},
		{`DELETE FROM entitlement_revocations WHERE expires_at <= ?`, []any{n}},
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
