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

// LegacyRefreshToken returns the legacy token with this hash and its
// family. ErrNotFound if there is none.
func (s *Store) LegacyRefreshToken(ctx context.Context, hash []byte) (store.RefreshToken, store.RefreshFamily, error) {
	var (
		t                        store.RefreshToken
		issued, expires, rotated pgtype.Timestamptz
	)
	f, err := scanFamily(s.pool.QueryRow(ctx, `SELECT t.hash, t.family_id, t.parent, t.issued_at, t.expires_at,
		t.rotated_at, t.successor, `+familyColumns+`
		FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id WHERE t.hash = $1`, hash),
		&t.Hash, &t.FamilyID, &t.Parent, &issued, &expires, &rotated, &t.Successor)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", err)
	}
	t.IssuedAt, t.ExpiresAt, t.RotatedAt = fromTS(issued), fromTS(expires), fromTS(rotated)
	t.Parent, t.Successor = nonEmpty(t.Parent), nonEmpty(t.Successor)
	return t, f, nil
}

// ConvertLegacyFamily rotates a legacy token into the constant scheme, in
// one transaction that first locks the token's row and its family's with
// SELECT ... FOR UPDATE. A concurrent conversion of the same token, or a
// revocation of the family, on any instance, waits for that lock or holds
// it: the checks below see the rows as the one before left them, and
// nothing can change them until this transaction ends.
func (s *Store) ConvertLegacyFamily(ctx context.Context, parentHash, salt, next []byte, nextExpiresAt, now time.Time) error {
	var familyID string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		familyID = ""
		var rotated, revoked pgtype.Timestamptz
		err := tx.QueryRow(ctx, `SELECT t.family_id, t.rotated_at, f.revoked_at
			FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
			WHERE t.hash = $1 FOR UPDATE`, parentHash).Scan(&familyID, &rotated, &revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			familyID = ""
			return store.ErrNotFound
		case err != nil:
			return err
		case revoked.Valid:
			return store.ErrFamilyRevoked
		case rotated.Valid:
			return store.ErrAlreadyRotated
		}
		if _, err := tx.Exec(ctx, `UPDATE refresh_tokens SET rotated_at = $1, successor = $2 WHERE hash = $3`,
			ts(now), blob(next), parentHash); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE refresh_families SET salt = $1, generation = 2, previous_hash = $2,
			current_hash = $3, current_expires_at = $4, rotated_at = $5 WHERE id = $6 AND generation = 0`,
			blob(salt), parentHash, blob(next), ts(nextExpiresAt), ts(now), familyID)
		if err != nil {
			return err
		}
		return oneRow(tag)
	})
	if err != nil {
		if familyID != "" {
			return fmt.Errorf("converting refresh family %q: %w", familyID, err)
		}
		return fmt.Errorf("converting a legacy refresh family: %w", err)
	}
	return nil
}

// SeedLegacyFamily stores a legacy family (generation 0) with its tokens
// and recorded access tokens, as a database of the scheme before the
// constant one held them. Only tests call it (store.LegacySeeder).
func (s *Store) SeedLegacyFamily(ctx context.Context, f store.RefreshFamily, tokens []store.RefreshToken, ats []store.IssuedAccessToken) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO refresh_families
			(id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			f.ID, f.ClientID, f.Subject, textList(f.Scopes), ts(f.AuthTime), ts(f.Created),
			ts(f.ExpiresAt), ts(f.RevokedAt)); err != nil {
			return err
		}
		for _, t := range tokens {
			if _, err := tx.Exec(ctx, `INSERT INTO refresh_tokens
				(hash, family_id, parent, issued_at, expires_at, rotated_at, successor) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				blob(t.Hash), f.ID, blob(t.Parent), ts(t.IssuedAt), ts(t.ExpiresAt),
				ts(t.RotatedAt), blob(t.Successor)); err != nil {
				return err
			}
		}
		for _, at := range ats {
			if _, err := tx.Exec(ctx, `INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES ($1, $2, $3)`,
				at.JTI, f.ID, ts(at.ExpiresAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if isUnique(err) {
		return fmt.Errorf("seeding legacy refresh family %q: %w", f.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("seeding legacy refresh family %q: %w", f.ID, err)
	}
	return nil
}

var _ store.LegacySeeder = (*Store)(nil)
