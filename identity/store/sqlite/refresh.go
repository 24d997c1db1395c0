package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// CreateRefreshFamily stores a new family with its first token and the
// access token issued alongside it, in one transaction. first.FamilyID may be
// empty (it is set to f.ID). ErrAlreadyExists if the family ID, the token
// hash or the access token's JTI is taken.
func (s *Store) CreateRefreshFamily(ctx context.Context, f store.RefreshFamily, first store.RefreshToken, at store.IssuedAccessToken) error {
	if first.FamilyID != "" && first.FamilyID != f.ID {
		return fmt.Errorf("creating refresh family %q: first token belongs to family %q", f.ID, first.FamilyID)
	}
	first.FamilyID = f.ID
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_families
			(id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			f.ID, f.ClientID, f.Subject, encodeList(f.Scopes), millis(f.AuthTime), millis(f.Created),
			millis(f.ExpiresAt), millis(f.RevokedAt)); err != nil {
			return err
		}
		if err := s.insertRefreshToken(ctx, tx, first); err != nil {
			return err
		}
		return s.insertAccessToken(ctx, tx, f.ID, at)
	})
	if isUnique(err) {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, err)
	}
	return nil
}

// refreshTokenQuery reads a refresh token and its family by the token's hash.
const refreshTokenQuery = `SELECT
		t.hash, t.family_id, t.parent, t.issued_at, t.expires_at, t.rotated_at, t.successor,
		f.id, f.client_id, f.subject, f.scopes, f.auth_time, f.created_at, f.expires_at, f.revoked_at
	FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
	WHERE t.hash = ?`

// RefreshToken returns the token with this hash and its family. ErrNotFound
// if there is none.
func (s *Store) RefreshToken(ctx context.Context, hash []byte) (store.RefreshToken, store.RefreshFamily, error) {
	var (
		t                                    store.RefreshToken
		f                                    store.RefreshFamily
		scopes                               string
		issued, expires, rotated             sql.NullInt64
		authTime, created, fexpires, revoked sql.NullInt64
	)
	err := s.q.refreshToken.QueryRowContext(ctx, hash).Scan(
		&t.Hash, &t.FamilyID, &t.Parent, &issued, &expires, &rotated, &t.Successor,
		&f.ID, &f.ClientID, &f.Subject, &scopes, &authTime, &created, &fexpires, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", err)
	}
	if f.Scopes, err = decodeList(scopes); err != nil {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh family %q: scopes: %w", f.ID, err)
	}
	t.IssuedAt, t.ExpiresAt, t.RotatedAt = fromMillis(issued), fromMillis(expires), fromMillis(rotated)
	f.AuthTime, f.Created = fromMillis(authTime), fromMillis(created)
	f.ExpiresAt, f.RevokedAt = fromMillis(fexpires), fromMillis(revoked)
	return t, f, nil
}

// rotateQuery is the compare-and-swap of a rotation: it marks the parent
// rotated, with its successor, unless it is rotated or its family revoked.
const rotateQuery = `UPDATE refresh_tokens SET rotated_at = ?, successor = ?
	WHERE hash = ? AND rotated_at IS NULL AND EXISTS (
		SELECT 1 FROM refresh_families f
		WHERE f.id = refresh_tokens.family_id AND f.revoked_at IS NULL)
	RETURNING family_id`

// RotateRefreshToken is the compare-and-swap of a refresh, in one
// transaction: the UPDATE only matches a parent that is not rotated and whose
// family is not revoked, so of many callers exactly one changes a row; the
// others learn why from the same transaction. child.FamilyID may be empty
// and child.Parent is set to parentHash.
func (s *Store) RotateRefreshToken(ctx context.Context, parentHash []byte, child store.RefreshToken, at store.IssuedAccessToken, now time.Time) error {
	var familyID string
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.StmtContext(ctx, s.q.rotate).QueryRowContext(ctx,
			millis(now), blob(child.Hash), parentHash).Scan(&familyID)
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRotated(ctx, tx, parentHash)
		}
		if err != nil {
			return err
		}
		if child.FamilyID != "" && child.FamilyID != familyID {
			return fmt.Errorf("child token belongs to family %q", child.FamilyID)
		}
		child.FamilyID = familyID
		child.Parent = parentHash
		if err := s.insertRefreshToken(ctx, tx, child); err != nil {
			return err
		}
		return s.insertAccessToken(ctx, tx, familyID, at)
	})
	if isUnique(err) {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		if familyID != "" {
			return fmt.Errorf("rotating refresh token of family %q: %w", familyID, err)
		}
		return fmt.Errorf("rotating refresh token: %w", err)
	}
	return nil
}

// whyNotRotated tells why the rotation of the token with parentHash changed
// nothing: store.ErrNotFound, ErrFamilyRevoked or ErrAlreadyRotated.
func whyNotRotated(ctx context.Context, tx *sql.Tx, parentHash []byte) error {
	var rotated, revoked sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT t.rotated_at, f.revoked_at
		FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
		WHERE t.hash = ?`, parentHash).Scan(&rotated, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	case revoked.Valid:
		return store.ErrFamilyRevoked
	case rotated.Valid:
		return store.ErrAlreadyRotated
	}
	return errors.New("compare-and-swap failed with the token neither rotated nor revoked")
}

// RecordAccessToken records an access token issued from a family, so that
// revoking the family revokes it too. ErrNotFound if there is no such family,
// ErrFamilyRevoked if it is revoked.
func (s *Store) RecordAccessToken(ctx context.Context, familyID string, at store.IssuedAccessToken) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var revoked sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM refresh_families WHERE id = ?`, familyID).Scan(&revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound
		case err != nil:
			return err
		case revoked.Valid:
			return store.ErrFamilyRevoked
		}
		return s.insertAccessToken(ctx, tx, familyID, at)
	})
	if isUnique(err) {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		return fmt.Errorf("recording access token of refresh family %q: %w", familyID, err)
	}
	return nil
}

// RevokeRefreshFamily revokes a family at now and, in the same transaction,
// revokes every access token recorded for it that has not expired at now.
// Revoking a revoked family changes nothing; ErrNotFound if there is none.
func (s *Store) RevokeRefreshFamily(ctx context.Context, familyID string, now time.Time) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = ?
			WHERE id = ? AND revoked_at IS NULL`, millis(now), familyID)
		if err != nil {
			return err
		}
		if err := oneRow(res); err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			// Revoked before, or not there at all.
			var exists bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM refresh_families WHERE id = ?)`,
				familyID).Scan(&exists)
			if err != nil {
				return err
			}
			if !exists {
				return store.ErrNotFound
			}
			return nil
		}
		// WHERE before ON CONFLICT keeps SQLite from reading ON as a join.
		_, err = tx.ExecContext(ctx, `INSERT INTO revocations (jti, expires_at, revoked_at)
			SELECT jti, expires_at, ? FROM family_access_tokens
			WHERE family_id = ? AND expires_at > ?
			ON CONFLICT (jti) DO NOTHING`, millis(now), familyID, millis(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("revoking refresh family %q: %w", familyID, err)
	}
	return nil
}

// insertRefreshTokenQuery stores a refresh token.
const insertRefreshTokenQuery = `INSERT INTO refresh_tokens
	(hash, family_id, parent, issued_at, expires_at, rotated_at, successor)
	VALUES (?, ?, ?, ?, ?, ?, ?)`

// insertRefreshToken stores t, within the write transaction tx.
func (s *Store) insertRefreshToken(ctx context.Context, tx *sql.Tx, t store.RefreshToken) error {
	_, err := tx.StmtContext(ctx, s.q.insertRefreshToken).ExecContext(ctx,
		blob(t.Hash), t.FamilyID, blob(t.Parent), millis(t.IssuedAt), millis(t.ExpiresAt),
		millis(t.RotatedAt), blob(t.Successor))
	return err
}

// insertAccessTokenQuery records an access token issued from a family.
const insertAccessTokenQuery = `INSERT INTO family_access_tokens (jti, family_id, expires_at)
	VALUES (?, ?, ?)`

// insertAccessToken records at as issued from the family familyID, within
// the write transaction tx.
func (s *Store) insertAccessToken(ctx context.Context, tx *sql.Tx, familyID string, at store.IssuedAccessToken) error {
	if at.JTI == "" {
		return errors.New("access token has no jti")
	}
	_, err := tx.StmtContext(ctx, s.q.insertAccessToken).ExecContext(ctx, at.JTI, familyID, millis(at.ExpiresAt))
	return err
}
