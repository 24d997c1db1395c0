package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// familyColumns are the columns of a refresh family, in scanFamily's order.
const familyColumns = `f.id, f.client_id, f.subject, f.scopes, f.auth_time, f.created_at, f.expires_at, f.revoked_at,
	f.salt, f.generation, f.current_hash, f.current_expires_at, f.previous_hash, f.rotated_at,
	f.session_id, f.entitlements, f.amr`

// scanFamily reads familyColumns, after the extra destinations before.
func scanFamily(row scanner, before ...any) (store.RefreshFamily, error) {
	var (
		f                                   store.RefreshFamily
		scopes, pairs, amr                  string
		authTime, created, expires, revoked sql.NullInt64
		currentExpires, rotated             sql.NullInt64
		salt, current, previous             []byte
	)
	dest := append(before, &f.ID, &f.ClientID, &f.Subject, &scopes, &authTime, &created, &expires, &revoked,
		&salt, &f.Generation, &current, &currentExpires, &previous, &rotated, &f.SessionID, &pairs, &amr)
	if err := row.Scan(dest...); err != nil {
		return store.RefreshFamily{}, err
	}
	var err error
	if f.Scopes, err = decodeList(scopes); err != nil {
		return store.RefreshFamily{}, fmt.Errorf("refresh family %q: scopes: %w", f.ID, err)
	}
	if f.Entitlements, err = decodeSet(pairs); err != nil {
		return store.RefreshFamily{}, fmt.Errorf("refresh family %q: %w", f.ID, err)
	}
	if f.AMR, err = decodeList(amr); err != nil {
		return store.RefreshFamily{}, fmt.Errorf("refresh family %q: amr: %w", f.ID, err)
	}
	f.AuthTime, f.Created, f.ExpiresAt, f.RevokedAt = fromMillis(authTime), fromMillis(created), fromMillis(expires), fromMillis(revoked)
	f.Salt, f.Current, f.Previous = nonEmpty(salt), nonEmpty(current), nonEmpty(previous)
	f.CurrentExpiresAt, f.RotatedAt = fromMillis(currentExpires), fromMillis(rotated)
	return f, nil
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// CreateRefreshFamily stores a new family of the constant scheme and,
// with bound.Keep > 0, applies the bound in the same write transaction
// (boundFamiliesTx); the writes are serialized, so concurrent creates
// leave at most Keep. ErrAlreadyExists if its ID is taken.
func (s *Store) CreateRefreshFamily(ctx context.Context, f store.RefreshFamily, bound store.FamilyBound) error {
	if f.Generation != 1 || len(f.Current) == 0 || len(f.Previous) != 0 {
		return fmt.Errorf("creating refresh family %q: a new family has generation 1, a current hash and no previous one", f.ID)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_families
			(id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at,
			 salt, generation, current_hash, current_expires_at, previous_hash, rotated_at, session_id, entitlements, amr)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?)`,
			f.ID, f.ClientID, f.Subject, encodeList(f.Scopes), millis(f.AuthTime), millis(f.Created),
			millis(f.ExpiresAt), millis(f.RevokedAt), blob(f.Salt), f.Generation, blob(f.Current), millis(f.CurrentExpiresAt),
			f.SessionID, encodeSet(f.Entitlements), encodeList(f.AMR)); err != nil {
			return err
		}
		if bound.Keep <= 0 {
			return nil
		}
		return boundFamiliesTx(ctx, tx, f, bound)
	})
	if isUnique(err) {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, err)
	}
	return nil
}

// boundFamiliesTx deletes, within a write transaction, the families of
// f's subject and client past bound.Keep, as CreateRefreshFamily
// documents: those not expired at f.Created, f aside, ranked live first,
// then by last use, past the first Keep-1. Those that may have issued an
// access token still accepted are revoked first (revokeFamiliesTx), until
// bound.TokensLife after f.Created. The legacy tokens and recorded access
// tokens of the deleted families go by ON DELETE CASCADE; their
// revocations stay.
func boundFamiliesTx(ctx context.Context, tx *sql.Tx, f store.RefreshFamily, bound store.FamilyBound) error {
	now := millis(f.Created)
	rows, err := tx.QueryContext(ctx, `SELECT id FROM refresh_families
		WHERE subject = ? AND client_id = ? AND id <> ? AND expires_at > ?
		ORDER BY (revoked_at IS NULL AND COALESCE(current_expires_at, expires_at) > ?) DESC,
			COALESCE(rotated_at, created_at) DESC NULLS LAST, id DESC
		LIMIT -1 OFFSET ?`, f.Subject, f.ClientID, f.ID, now, now, bound.Keep-1)
	if err != nil {
		return err
	}
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// A batch at a time: usually one family, more when Keep was lowered.
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 256)]
		ids = ids[len(batch):]
		in := "f.id IN (?" + strings.Repeat(", ?", len(batch)-1) + ")"
		args := append([]any{now, now, bound.TokensLife.Milliseconds(), now}, batch...)
		if _, err := tx.ExecContext(ctx, `UPDATE refresh_families AS f SET revoked_at = ?
			WHERE f.revoked_at IS NULL AND COALESCE(f.rotated_at, f.created_at, ?) + ? > ? AND `+in, args...); err != nil {
			return err
		}
		if err := revokeFamiliesTx(ctx, tx, in, batch, f.Created, f.Created.Add(bound.TokensLife)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM refresh_families AS f WHERE `+in, batch...); err != nil {
			return err
		}
	}
	return nil
}

// SessionRefreshFamilies returns the families granted through the login
// session sid, revoked or not.
func (s *Store) SessionRefreshFamilies(ctx context.Context, sid string) ([]store.RefreshFamily, error) {
	if sid == "" {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+familyColumns+` FROM refresh_families f WHERE f.session_id = ? ORDER BY f.created_at, f.id`, sid)
	if err != nil {
		return nil, fmt.Errorf("reading the refresh families of a session: %w", err)
	}
	defer rows.Close()
	var out []store.RefreshFamily
	for rows.Next() {
		f, err := scanFamily(rows)
		if err != nil {
			return nil, fmt.Errorf("reading the refresh families of a session: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the refresh families of a session: %w", err)
	}
	return out, nil
}

// familyQuery reads a family by id.
const familyQuery = `SELECT ` + familyColumns + ` FROM refresh_families f WHERE f.id = ?`

// RefreshFamily returns the family with this id. ErrNotFound if there is
// none.
func (s *Store) RefreshFamily(ctx context.Context, id string) (store.RefreshFamily, error) {
	f, err := scanFamily(s.q.family.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.RefreshFamily{}, fmt.Errorf("reading refresh family: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.RefreshFamily{}, fmt.Errorf("reading refresh family: %w", err)
	}
	return f, nil
}

// refreshStateQuery reads a family with its subject's user and whether the
// subject's sessions were ended after the family's auth time (as
// tokenRevokedQuery tells it of a subject): no row when the family or the
// user is missing.
const refreshStateQuery = `SELECT ` + userColumnsOfU + `,
	EXISTS (SELECT 1 FROM subject_revocations r WHERE r.subject = f.subject AND r.not_before > f.auth_time), ` +
	familyColumns + ` FROM refresh_families f JOIN users u ON u.subject = f.subject WHERE f.id = ?`

// RefreshState returns a family with what a refresh checks of its
// subject, in one statement; a family whose user is missing (rare: a
// deleted user) is read again without it.
func (s *Store) RefreshState(ctx context.Context, id string) (store.RefreshState, error) {
	var (
		u     userFields
		ended bool
	)
	f, err := scanFamily(s.q.refreshState.QueryRowContext(ctx, id), append(u.dest(), &ended)...)
	if errors.Is(err, sql.ErrNoRows) {
		f, err := s.RefreshFamily(ctx, id)
		return store.RefreshState{Family: f}, err
	}
	if err != nil {
		return store.RefreshState{}, fmt.Errorf("reading refresh family: %w", err)
	}
	user, err := u.user()
	if err != nil {
		return store.RefreshState{}, fmt.Errorf("reading refresh family %q: user: %w", id, err)
	}
	return store.RefreshState{Family: f, User: &user, SessionsEnded: ended}, nil
}

// rotateFamilyQuery is the compare-and-swap of a rotation: it moves the
// generation on, unless it has moved already or the family is revoked.
const rotateFamilyQuery = `UPDATE refresh_families SET previous_hash = current_hash, current_hash = ?,
	current_expires_at = ?, generation = generation + 1, rotated_at = ?
	WHERE id = ? AND generation = ? AND revoked_at IS NULL`

// RotateRefreshFamily is the compare-and-swap of a refresh in one
// statement: of many callers with the same from, exactly one changes the
// row; the others learn why from the same transaction.
func (s *Store) RotateRefreshFamily(ctx context.Context, id string, from int, next []byte, nextExpiresAt, now time.Time) error {
	if from < 1 {
		return fmt.Errorf("rotating refresh family %q: generation %d is not of the constant scheme", id, from)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.q.rotateFamily).ExecContext(ctx,
			blob(next), millis(nextExpiresAt), millis(now), id, from)
		if err != nil {
			return err
		}
		if err := oneRow(res); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var (
			generation int
			revoked    sql.NullInt64
		)
		err = tx.QueryRowContext(ctx, `SELECT generation, revoked_at FROM refresh_families WHERE id = ?`, id).Scan(&generation, &revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound
		case err != nil:
			return err
		case revoked.Valid:
			return store.ErrFamilyRevoked
		case generation != from:
			return store.ErrAlreadyRotated
		}
		return errors.New("compare-and-swap failed with the family neither rotated nor revoked")
	})
	if err != nil {
		return fmt.Errorf("rotating refresh family %q: %w", id, err)
	}
	return nil
}

// RevokeRefreshFamily revokes a family at now and, in the same
// transaction, records the family's revocation until tokensUntil and
// revokes the access tokens recorded for a legacy family. Revoking a
// revoked family changes nothing; ErrNotFound if there is none.
func (s *Store) RevokeRefreshFamily(ctx context.Context, id string, now, tokensUntil time.Time) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = ?
			WHERE id = ? AND revoked_at IS NULL`, millis(now), id)
		if err != nil {
			return err
		}
		if err := oneRow(res); err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			// Revoked before, or not there at all.
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM refresh_families WHERE id = ?)`, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return store.ErrNotFound
			}
			return nil
		}
		return revokeFamiliesTx(ctx, tx, `f.id = ?`, []any{id}, now, tokensUntil)
	})
	if err != nil {
		return fmt.Errorf("revoking refresh family %q: %w", id, err)
	}
	return nil
}

// revokeFamiliesTx records, within a write transaction, the revocations of
// the families just revoked at now that match where (on refresh_families
// f): each family until tokensUntil, and the recorded access tokens of
// legacy ones by jti.
func revokeFamiliesTx(ctx context.Context, tx *sql.Tx, where string, args []any, now, tokensUntil time.Time) error {
	n := millis(now)
	q := `INSERT INTO family_revocations (family_id, expires_at, revoked_at)
		SELECT f.id, ?, ? FROM refresh_families f WHERE f.revoked_at = ? AND ` + where + `
		ON CONFLICT (family_id) DO NOTHING`
	if _, err := tx.ExecContext(ctx, q, append([]any{millis(tokensUntil), n, n}, args...)...); err != nil {
		return err
	}
	// WHERE before ON CONFLICT keeps SQLite from reading ON as a join.
	q = `INSERT INTO revocations (jti, expires_at, revoked_at)
		SELECT a.jti, a.expires_at, ? FROM family_access_tokens a JOIN refresh_families f ON f.id = a.family_id
		WHERE a.expires_at > ? AND f.revoked_at = ? AND ` + where + `
		ON CONFLICT (jti) DO NOTHING`
	_, err := tx.ExecContext(ctx, q, append([]any{n, n, n}, args...)...)
	return err
}

// legacyTokenQuery reads a legacy refresh token and its family by the
// token's hash.
const legacyTokenQuery = `SELECT t.hash, t.family_id, t.parent, t.issued_at, t.expires_at, t.rotated_at, t.successor, ` +
	familyColumns + ` FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id WHERE t.hash = ?`

// LegacyRefreshToken returns the legacy token with this hash and its
// family. ErrNotFound if there is none.
func (s *Store) LegacyRefreshToken(ctx context.Context, hash []byte) (store.RefreshToken, store.RefreshFamily, error) {
	var (
		t                        store.RefreshToken
		issued, expires, rotated sql.NullInt64
	)
	f, err := scanFamily(s.q.legacyToken.QueryRowContext(ctx, hash),
		&t.Hash, &t.FamilyID, &t.Parent, &issued, &expires, &rotated, &t.Successor)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.RefreshToken{}, store.RefreshFamily{}, fmt.Errorf("reading refresh token: %w", err)
	}
	t.IssuedAt, t.ExpiresAt, t.RotatedAt = fromMillis(issued), fromMillis(expires), fromMillis(rotated)
	t.Parent, t.Successor = nonEmpty(t.Parent), nonEmpty(t.Successor)
	return t, f, nil
}

// rotateLegacyQuery marks a legacy token rotated, with its successor,
// unless it is rotated or its family revoked.
const rotateLegacyQuery = `UPDATE refresh_tokens SET rotated_at = ?, successor = ?
	WHERE hash = ? AND rotated_at IS NULL AND EXISTS (
		SELECT 1 FROM refresh_families f
		WHERE f.id = refresh_tokens.family_id AND f.revoked_at IS NULL)
	RETURNING family_id`

// ConvertLegacyFamily rotates a legacy token into the constant scheme, in
// one transaction whose first statement is the compare-and-swap.
func (s *Store) ConvertLegacyFamily(ctx context.Context, parentHash, salt, next []byte, nextExpiresAt, now time.Time) error {
	var familyID string
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, rotateLegacyQuery, millis(now), blob(next), parentHash).Scan(&familyID)
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRotated(ctx, tx, parentHash)
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE refresh_families SET salt = ?, generation = 2, previous_hash = ?,
			current_hash = ?, current_expires_at = ?, rotated_at = ? WHERE id = ? AND generation = 0`,
			blob(salt), parentHash, blob(next), millis(nextExpiresAt), millis(now), familyID)
		if err != nil {
			return err
		}
		return oneRow(res)
	})
	if err != nil {
		if familyID != "" {
			return fmt.Errorf("converting refresh family %q: %w", familyID, err)
		}
		return fmt.Errorf("converting a legacy refresh family: %w", err)
	}
	return nil
}

// whyNotRotated tells why the rotation of the legacy token with parentHash
// changed nothing: store.ErrNotFound, ErrFamilyRevoked or ErrAlreadyRotated.
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

// SeedLegacyFamily stores a legacy family (generation 0) with its tokens
// and recorded access tokens, as a database of schema version 2 holds
// them. Only tests call it (store.LegacySeeder).
func (s *Store) SeedLegacyFamily(ctx context.Context, f store.RefreshFamily, tokens []store.RefreshToken, ats []store.IssuedAccessToken) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_families
			(id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			f.ID, f.ClientID, f.Subject, encodeList(f.Scopes), millis(f.AuthTime), millis(f.Created),
			millis(f.ExpiresAt), millis(f.RevokedAt)); err != nil {
			return err
		}
		for _, t := range tokens {
			if _, err := tx.ExecContext(ctx, `INSERT INTO refresh_tokens
				(hash, family_id, parent, issued_at, expires_at, rotated_at, successor) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				blob(t.Hash), f.ID, blob(t.Parent), millis(t.IssuedAt), millis(t.ExpiresAt),
				millis(t.RotatedAt), blob(t.Successor)); err != nil {
				return err
			}
		}
		for _, at := range ats {
			if _, err := tx.ExecContext(ctx, `INSERT INTO family_access_tokens (jti, family_id, expires_at) VALUES (?, ?, ?)`,
				at.JTI, f.ID, millis(at.ExpiresAt)); err != nil {
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
