package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/identity/store"
)

// revokeAccessQuery records the revocation of one access token.
const revokeAccessQuery = `INSERT INTO revocations (jti, expires_at, revoked_at) VALUES ($1, $2, $3)
	ON CONFLICT (jti) DO NOTHING`

// revokeAccessNotifyQuery is revokeAccessQuery and its notice in one
// statement, so in one transaction (a data-modifying WITH runs once,
// whatever the outer query reads of it).
const revokeAccessNotifyQuery = `WITH revoked AS (` + revokeAccessQuery + `) ` + notifyQuery

// RevokeAccessToken records the revocation of the access token jti that
// expires at exp, and notifies the listeners with it (unless notices are
// off). Revoking twice is not an error and keeps the first revocation.
func (s *Store) RevokeAccessToken(ctx context.Context, jti string, exp, now time.Time) error {
	q := revokeAccessQuery
	if s.notify != nil {
		q = revokeAccessNotifyQuery
	}
	_, err := s.pool.Exec(ctx, q, jti, ts(exp), ts(now))
	if err != nil {
		return fmt.Errorf("revoking access token %q: %w", jti, err)
	}
	return nil
}

// RevokeSubject revokes, in one transaction, the subject's live families
// (with their revocations, as RevokeRefreshFamily records them), deletes
// its browser sessions, ends its codes (endSubjectCodesTx), records the
// subject's not-before time, and
// notifies the listeners
// (unless notices are off). A later revocation of the same
// subject moves NotBefore and the expiry on, never back.
func (s *Store) RevokeSubject(ctx context.Context, subject string, now, tokensUntil time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error { return s.revokeSubjectTx(ctx, tx, subject, now, tokensUntil) })
	if err == nil {
		err = s.revokeSubjectLate(ctx, subject, now, tokensUntil)
	}
	if err != nil {
		return fmt.Errorf("revoking the sessions of subject %q: %w", subject, err)
	}
	return nil
}

// revokeSubjectTx is RevokeSubject's first pass, in tx; the caller runs
// revokeSubjectLate once tx is committed.
func (s *Store) revokeSubjectTx(ctx context.Context, tx pgx.Tx, subject string, now, tokensUntil time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE refresh_families SET revoked_at = $1
		WHERE subject = $2 AND revoked_at IS NULL`, ts(now), subject); err != nil {
		return err
	}
	if err := revokeFamiliesTx(ctx, tx, familiesBySubject, subject, now, tokensUntil); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE subject = $1`, subject); err != nil {
		return err
	}
	if err := endSubjectCodesTx(ctx, tx, subject, now, false); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO subject_revocations AS r (subject, not_before, expires_at, revoked_at)
		VALUES ($1, $2, $3, $2)
		ON CONFLICT (subject) DO UPDATE SET not_before = GREATEST(r.not_before, excluded.not_before),
			expires_at = GREATEST(r.expires_at, excluded.expires_at), revoked_at = GREATEST(r.revoked_at, excluded.revoked_at)`,
		subject, ts(now), ts(tokensUntil))
	if err != nil {
		return err
	}
	return s.notifyTx(ctx, tx)
}

// revokeSubjectLate is RevokeSubject's second pass, once its revocation is
// committed: it deletes the sessions, and revokes the families, that the
// first missed because they were committed while it ran (at READ
// COMMITTED its statements do not see them) yet belong to an
// authentication from before now. A login stores its session (or family)
// and then reads the subject's revocation: if that read came before the
// revocation's commit, the row was committed before this pass starts, and
// this pass sees it; otherwise the login saw the revocation and refused
// itself (session.Manager.Start, tokens' sessionsEnded).
func (s *Store) revokeSubjectLate(ctx context.Context, subject string, now, tokensUntil time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE subject = $1 AND (auth_time IS NULL OR auth_time < $2)`, subject, ts(now)); err != nil {
			return err
		}
		if err := endSubjectCodesTx(ctx, tx, subject, now, true); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE refresh_families SET revoked_at = $1
			WHERE subject = $2 AND revoked_at IS NULL AND (auth_time IS NULL OR auth_time < $1)`, ts(now), subject)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if err := revokeFamiliesTx(ctx, tx, familiesBySubject, subject, now, tokensUntil); err != nil {
			return err
		}
		return s.notifyTx(ctx, tx)
	})
}

// endSubjectCodesTx ends what the subject authorized that has not yet
// given a token (of an authentication before now only, when before): its
// unused authorization codes go, and its approved device authorizations
// not yet used become denied (the device is told access_denied). The
// subject's revocation refuses them too, but only while it lasts (the
// access tokens' lifetime), which a device code may outlive, and a user
// enabled again, or added again with the subject, would then get tokens
// for an approval made before.
func endSubjectCodesTx(ctx context.Context, tx pgx.Tx, subject string, now time.Time, before bool) error {
	if _, err := tx.Exec(ctx, `DELETE FROM auth_codes WHERE subject = $1 AND used_at IS NULL
		AND (NOT $2 OR auth_time IS NULL OR auth_time < $3)`, subject, before, ts(now)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE device_codes SET state = $1, decided_at = $2
		WHERE subject = $3 AND state = $4 AND used_at IS NULL
		AND (NOT $5 OR auth_time IS NULL OR auth_time < $2)`, store.DeviceDenied, ts(now), subject, store.DeviceApproved, before)
	return err
}

// revocationsQuery lists the four kinds of revocation revoked at $1 or
// later ($1 NULL: at any time) and not expired at $2, oldest revocation
// first, then by what they revoke, byte order; the last column is an
// entitlement change's set, NULL for the others.
const revocationsQuery = `SELECT jti, family_id, subject, not_before, expires_at, revoked_at, entitlements FROM (
		SELECT jti, '' AS family_id, '' AS subject, NULL::timestamptz AS not_before, expires_at, revoked_at,
				NULL::text[] AS entitlements
			FROM revocations WHERE ($1::timestamptz IS NULL OR revoked_at >= $1) AND expires_at > $2
		UNION ALL SELECT '', family_id, '', NULL, expires_at, revoked_at, NULL
			FROM family_revocations WHERE ($1::timestamptz IS NULL OR revoked_at >= $1) AND expires_at > $2
		UNION ALL SELECT '', '', subject, not_before, expires_at, revoked_at, NULL
			FROM subject_revocations WHERE ($1::timestamptz IS NULL OR revoked_at >= $1) AND expires_at > $2
		UNION ALL SELECT '', '', subject, not_before, expires_at, revoked_at, entitlements
			FROM entitlement_revocations WHERE ($1::timestamptz IS NULL OR revoked_at >= $1) AND expires_at > $2
	) r
	ORDER BY revoked_at, jti COLLATE "C", family_id COLLATE "C", subject COLLATE "C"`

// Revocations lists the revocations that have not expired at now (one
// expiring at now has expired), oldest revocation first.
func (s *Store) Revocations(ctx context.Context, now time.Time) ([]store.Revocation, error) {
	return s.revocations(ctx, nil, now)
}

// RevocationsSince lists those revoked at since or later, to the
// millisecond.
func (s *Store) RevocationsSince(ctx context.Context, since, now time.Time) ([]store.Revocation, error) {
	return s.revocations(ctx, ms(since), now)
}

func (s *Store) revocations(ctx context.Context, since any, now time.Time) ([]store.Revocation, error) {
	rows, err := s.pool.Query(ctx, revocationsQuery, since, ms(now))
	if err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	defer rows.Close()
	var revs []store.Revocation
	for rows.Next() {
		var (
			r                 store.Revocation
			nbf, exp, revoked pgtype.Timestamptz
			pairs             []string
		)
		if err := rows.Scan(&r.JTI, &r.FamilyID, &r.Subject, &nbf, &exp, &revoked, &pairs); err != nil {
			return nil, fmt.Errorf("listing revocations: %w", err)
		}
		r.NotBefore, r.ExpiresAt, r.RevokedAt = fromTS(nbf), fromTS(exp), fromTS(revoked)
		if pairs != nil {
			set, err := decodeSet(pairs)
			if err != nil {
				return nil, fmt.Errorf("listing revocations: the entitlement change of %q: %w", r.Subject, err)
			}
			r.Entitlements = &set
		}
		revs = append(revs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing revocations: %w", err)
	}
	return revs, nil
}

// tokenRevokedQuery tells whether an access token is revoked by its jti,
// its family or its subject (issued at $4, before the subject's not-before
// time).
const tokenRevokedQuery = `SELECT EXISTS (SELECT 1 FROM revocations WHERE jti = $1)
	OR EXISTS (SELECT 1 FROM family_revocations WHERE $2 <> '' AND family_id = $2)
	OR EXISTS (SELECT 1 FROM subject_revocations WHERE subject = $3 AND not_before > $4)`

// AccessTokenRevoked reports whether an access token is revoked and the
// revocation still stored (DeleteExpired removes it once every token it
// covers has expired).
func (s *Store) AccessTokenRevoked(ctx context.Context, jti, familyID, subject string, iat time.Time) (bool, error) {
	var revoked bool
	if err := s.pool.QueryRow(ctx, tokenRevokedQuery, jti, familyID, subject, ms(iat)).Scan(&revoked); err != nil {
		return false, fmt.Errorf("reading revocation of access token %q: %w", jti, err)
	}
	return revoked, nil
}
