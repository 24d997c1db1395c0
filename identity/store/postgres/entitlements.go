package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// decodeSet reads a text[] of "VENUE:feed"; a pair that does not parse
// is an error, never a pair dropped.
func decodeSet(pairs []string) (entitle.Set, error) {
	s, err := entitle.Parse(pairs...)
	if err != nil {
		return entitle.Set{}, fmt.Errorf("entitlements: %w", err)
	}
	return s, nil
}

// UpdateEntitlements reads the user FOR UPDATE, applies update and, when
// the set changed, writes it with the subject's entitlement change and a
// revocation notice, in one transaction: a concurrent change of the same
// user waits for the row, so two changes never interleave and the change
// recorded is always the user's set.
func (s *Store) UpdateEntitlements(ctx context.Context, username string, update func(entitle.Set) (entitle.Set, error), now, tokensUntil time.Time) (store.User, error) {
	var u store.User
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if u, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = $1 FOR UPDATE`, username)); err != nil {
			return err
		}
		next, err := update(u.Entitlements)
		if err != nil {
			return err
		}
		if next.Equal(u.Entitlements) {
			return nil
		}
		u.Entitlements, u.Updated = next, ms(now)
		if _, err := tx.Exec(ctx, `UPDATE users SET entitlements = $1, updated_at = $2 WHERE username = $3`,
			textList(next.Strings()), ts(now), username); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO entitlement_revocations (subject, not_before, entitlements, expires_at, revoked_at)
			VALUES ($1, $2, $3, $4, $2)
			ON CONFLICT (subject) DO UPDATE SET not_before = greatest(entitlement_revocations.not_before, excluded.not_before),
				entitlements = excluded.entitlements, expires_at = greatest(entitlement_revocations.expires_at, excluded.expires_at),
				revoked_at = greatest(entitlement_revocations.revoked_at, excluded.revoked_at)`,
			u.Subject, ts(now), textList(next.Strings()), ts(tokensUntil)); err != nil {
			return err
		}
		if err := insertAuditChange(ctx, tx, u); err != nil {
			return err
		}
		return s.notifyTx(ctx, tx)
	})
	if err != nil {
		return store.User{}, fmt.Errorf("changing the entitlements of user %q: %w", username, err)
	}
	return u, nil
}

// EntitlementChange returns the subject's last entitlement change.
func (s *Store) EntitlementChange(ctx context.Context, subject string) (store.Revocation, error) {
	var (
		nbf, exp, revoked pgtype.Timestamptz
		pairs             []string
	)
	err := s.pool.QueryRow(ctx, `SELECT not_before, entitlements, expires_at, revoked_at
		FROM entitlement_revocations WHERE subject = $1`, subject).Scan(&nbf, &pairs, &exp, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Revocation{}, fmt.Errorf("reading the entitlement change of %q: %w", subject, err)
	}
	set, err := decodeSet(pairs)
	if err != nil {
		return store.Revocation{}, fmt.Errorf("the entitlement change of %q: %w", subject, err)
	}
	return store.Revocation{Subject: subject, NotBefore: fromTS(nbf), ExpiresAt: fromTS(exp), RevokedAt: fromTS(revoked),
		Entitlements: &set}, nil
}
