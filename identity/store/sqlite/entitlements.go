package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// encodeSet is a set of pairs as a JSON array of "VENUE:feed".
func encodeSet(s entitle.Set) string { return encodeList(s.Strings()) }

// decodeSet reads encodeSet's form; a pair that does not parse is an
// error, never a pair dropped.
func decodeSet(text string) (entitle.Set, error) {
	l, err := decodeList(text)
	if err != nil {
		return entitle.Set{}, fmt.Errorf("entitlements: %w", err)
	}
	s, err := entitle.Parse(l...)
	if err != nil {
		return entitle.Set{}, fmt.Errorf("entitlements: %w", err)
	}
	return s, nil
}

// UpdateEntitlements reads the user, applies update and, when the set
// changed, writes it with the subject's entitlement change, in one write
// transaction (writes are serialized: two changes cannot interleave).
func (s *Store) UpdateEntitlements(ctx context.Context, username string, update func(entitle.Set) (entitle.Set, error), now, tokensUntil time.Time) (store.User, error) {
	var u store.User
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if u, err = scanUser(tx.QueryRowContext(ctx, userQuery, username)); err != nil {
			return err
		}
		next, err := update(u.Entitlements)
		if err != nil {
			return err
		}
		if next.Equal(u.Entitlements) {
			return nil
		}
		u.Entitlements, u.Updated = next, now
		if _, err := tx.ExecContext(ctx, `UPDATE users SET entitlements = ?, updated_at = ? WHERE username = ?`,
			encodeSet(next), millis(now), username); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO entitlement_revocations (subject, not_before, entitlements, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (subject) DO UPDATE SET not_before = max(not_before, excluded.not_before),
				entitlements = excluded.entitlements, expires_at = max(expires_at, excluded.expires_at),
				revoked_at = max(revoked_at, excluded.revoked_at)`,
			u.Subject, millis(now), encodeSet(next), millis(tokensUntil), millis(now))
		if err != nil {
			return err
		}
		return insertAuditChange(ctx, tx, u)
	})
	if err != nil {
		return store.User{}, fmt.Errorf("changing the entitlements of user %q: %w", username, err)
	}
	return u, nil
}

// EntitlementChange returns the subject's last entitlement change.
func (s *Store) EntitlementChange(ctx context.Context, subject string) (store.Revocation, error) {
	var (
		nbf, exp, revoked sql.NullInt64
		pairs             string
	)
	err := s.r.QueryRowContext(ctx, `SELECT not_before, entitlements, expires_at, revoked_at
		FROM entitlement_revocations WHERE subject = ?`, subject).Scan(&nbf, &pairs, &exp, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Revocation{}, fmt.Errorf("reading the entitlement change of %q: %w", subject, err)
	}
	return changeRevocation(subject, nbf, exp, revoked, pairs)
}

// changeRevocation is an entitlement change as a store.Revocation.
func changeRevocation(subject string, nbf, exp, revoked sql.NullInt64, pairs string) (store.Revocation, error) {
	set, err := decodeSet(pairs)
	if err != nil {
		return store.Revocation{}, fmt.Errorf("the entitlement change of %q: %w", subject, err)
	}
	return store.Revocation{Subject: subject, NotBefore: fromMillis(nbf), ExpiresAt: fromMillis(exp),
		RevokedAt: fromMillis(revoked), Entitlements: &set}, nil
}
