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

// familyColumns are the columns of a refresh family, in scanFamily's order.
const familyColumns = `f.id, f.client_id, f.subject, f.scopes, f.auth_time, f.created_at, f.expires_at, f.revoked_at,
	f.salt, f.generation, f.current_hash, f.current_expires_at, f.previous_hash, f.rotated_at,
	f.session_id, f.entitlements, f.amr`

// scanFamily reads familyColumns, after the extra destinations before.
func scanFamily(row pgx.Row, before ...any) (store.RefreshFamily, error) {
	var (
		f                                   store.RefreshFamily
		authTime, created, expires, revoked pgtype.Timestamptz
		currentExpires, rotated             pgtype.Timestamptz
		pairs                               []string
	)
	dest := append(before, &f.ID, &f.ClientID, &f.Subject, &f.Scopes, &authTime, &created, &expires, &revoked,
		&f.Salt, &f.Generation, &f.Current, &currentExpires, &f.Previous, &rotated, &f.SessionID, &pairs, &f.AMR)
	if err := row.Scan(dest...); err != nil {
		return store.RefreshFamily{}, err
	}
	var err error
	if f.Entitlements, err = decodeSet(pairs); err != nil {
		return store.RefreshFamily{}, fmt.Errorf("refresh family %q: %w", f.ID, err)
	}
	f.Scopes, f.AMR = nonEmpty(f.Scopes), nonEmpty(f.AMR)
	f.AuthTime, f.Created, f.ExpiresAt, f.RevokedAt = fromTS(authTime), fromTS(created), fromTS(expires), fromTS(revoked)
	f.Salt, f.Current, f.Previous = nonEmpty(f.Salt), nonEmpty(f.Current), nonEmpty(f.Previous)
	f.CurrentExpiresAt, f.RotatedAt = fromTS(currentExpires), fromTS(rotated)
	return f, nil
}

// CreateRefreshFamily stores a new family of the constant scheme and,
// with bound.Keep > 0, applies the bound in the same transaction
// (boundFamiliesTx). The transaction first takes an advisory lock on the
// subject and client, held to its end: without it, two concurrent creates
// would each rank the families committed before it, not the other's, and
// leave Keep+1. ErrAlreadyExists if its ID is taken.
func (s *Store) CreateRefreshFamily(ctx context.Context, f store.RefreshFamily, bound store.FamilyBound) error {
	if f.Generation != 1 || len(f.Current) == 0 || len(f.Previous) != 0 {
		return fmt.Errorf("creating refresh family %q: a new family has generation 1, a current hash and no previous one", f.ID)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if bound.Keep > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))`, f.Subject, f.ClientID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO refresh_families
			(id, client_id, subject, scopes, auth_time, created_at, expires_at, revoked_at,
			 salt, generation, current_hash, current_expires_at, previous_hash, rotated_at, session_id, entitlements, amr)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, NULL, $13, $14, $15)`,
			f.ID, f.ClientID, f.Subject, textList(f.Scopes), ts(f.AuthTime), ts(f.Created),
			ts(f.ExpiresAt), ts(f.RevokedAt), blob(f.Salt), f.Generation, blob(f.Current), ts(f.CurrentExpiresAt),
			f.SessionID, textList(f.Entitlements.Strings()), textList(f.AMR)); err != nil || bound.Keep <= 0 {
			return err
		}
		return s.boundFamiliesTx(ctx, tx, f, bound)
	})
	if isUnique(err) {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("creating refresh family %q: %w", f.ID, err)
	}
	return nil
}

// boundFamiliesTx deletes, within a transaction, the families of f's
// subject and client past bound.Keep, as CreateRefreshFamily documents:
// those not expired at f.Created, f aside, ranked live first, then by
// last use, past the first Keep-1 (expired ones are the purge's, which
// deletes in another order). Those that may have issued an access token
// still accepted are revoked first, until bound.TokensLife after
// f.Created, and the listeners told. The legacy tokens and recorded
// access tokens of the deleted families go by ON DELETE CASCADE; their
// revocations stay.
func (s *Store) boundFamiliesTx(ctx context.Context, tx pgx.Tx, f store.RefreshFamily, bound store.FamilyBound) error {
	now := ts(f.Created)
	rows, err := tx.Query(ctx, `SELECT id FROM refresh_families
		WHERE subject = $1 AND client_id = $2 AND id <> $3 AND expires_at > $4
		ORDER BY (revoked_at IS NULL AND COALESCE(current_expires_at, expires_at) > $4) DESC,
			COALESCE(rotated_at, created_at) DESC NULLS LAST, id DESC
		OFFSET $5`, f.Subject, f.ClientID, f.ID, now, bound.Keep-1)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE refresh_families SET revoked_at = $1
		WHERE id = ANY($2) AND revoked_at IS NULL
		AND COALESCE(rotated_at, created_at, $1) + $3 * interval '1 millisecond' > $1`,
		now, ids, bound.TokensLife.Milliseconds())
	if err != nil {
		return err
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO family_revocations (family_id, expires_at, revoked_at)
			SELECT id, $2, $1 FROM refresh_families WHERE revoked_at = $1 AND id = ANY($3)
			ON CONFLICT (family_id) DO NOTHING`, now, ts(f.Created.Add(bound.TokensLife)), ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO revocations (jti, expires_at, revoked_at)
			SELECT a.jti, a.expires_at, $1 FROM family_access_tokens a JOIN refresh_families f ON f.id = a.family_id
			WHERE a.expires_at > $1 AND f.revoked_at = $1 AND f.id = ANY($2)
			ON CONFLICT (jti) DO NOTHING`, now, ids); err != nil {
			return err
		}
		if err := s.notifyTx(ctx, tx); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `DELETE FROM refresh_families WHERE id = ANY($1)`, ids)
	return err
}

// SessionRefreshFamilies returns the families granted through the login
// session sid, revoked or not.
func (s *Store) SessionRefreshFamilies(ctx context.Context, sid string) ([]store.RefreshFamily, error) {
	if sid == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+familyColumns+` FROM refresh_families f WHERE f.session_id = $1 ORDER BY f.created_at, f.id`, sid)
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

// RefreshFamily returns the family with this id. ErrNotFound if there is
// none.
func (s *Store) RefreshFamily(ctx context.Context, id string) (store.RefreshFamily, error) {
	f, err := scanFamily(s.pool.QueryRow(ctx, `SELECT `+familyColumns+` FROM refresh_families f WHERE f.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	familyColumns + ` FROM refresh_families f JOIN users u ON u.subject = f.subject WHERE f.id = $1`

// RefreshState returns a family with what a refresh checks of its
// subject, in one statement; a family whose user is missing (rare: a
// deleted user) is read again without it.
func (s *Store) RefreshState(ctx context.Context, id string) (store.RefreshState, error) {
	var (
		u     userFields
		ended bool
	)
	f, err := scanFamily(s.pool.QueryRow(ctx, refreshStateQuery, id), append(u.dest(), &ended)...)
	if errors.Is(err, pgx.ErrNoRows) {
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
const rotateFamilyQuery = `UPDATE refresh_families SET previous_hash = current_hash, current_hash = $1,
	current_expires_at = $2, generation = generation + 1, rotated_at = $3
	WHERE id = $4 AND generation = $5 AND revoked_at IS NULL`

// RotateRefreshFamily is the compare-and-swap of a refresh in one
// statement. Of concurrent callers with the same from, on any number of
// instances, the first to update the row holds its lock until it commits;
// the others wait for it, and PostgreSQL (at READ COMMITTED) then checks
// their WHERE again on the row as the winner left it, where the
// generation no longer matches: exactly one changes the row. A loser then
// reads the row, in a statement of its own that sees the winner's commit,
// to tell why.
func (s *Store) RotateRefreshFamily(ctx context.Context, id string, from int, next []byte, nextExpiresAt, now time.Time) error {
	if from < 1 {
		return fmt.Errorf("rotating refresh family %q: generation %d is not of the constant scheme", id, from)
	}
	tag, err := s.pool.Exec(ctx, rotateFamilyQuery, blob(next), ts(nextExpiresAt), ts(now), id, from)
	if err == nil && tag.RowsAffected() == 0 {
		err = s.whyNotRotated(ctx, id, from)
	}
	if err != nil {
		return fmt.Errorf("rotating refresh family %q: %w", id, err)
	}
	return nil
}

// whyNotRotated tells why the rotation of the family id from generation
// from changed nothing: store.ErrNotFound, ErrFamilyRevoked or
// ErrAlreadyRotated.
func (s *Store) whyNotRotated(ctx context.Context, id string, from int) error {
	var (
		generation int
		revoked    pgtype.Timestamptz
	)
	err := s.pool.QueryRow(ctx, `SELECT generation, revoked_at FROM refresh_families WHERE id = $1`, id).Scan(&generation, &revoked)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	case revoked.Valid:
		return store.ErrFamilyRevoked
	case generation != from:
		return store.ErrAlreadyRotated
	}
	return errors.New("compare-and-swap failed with the family neither rotated nor revoked")
}

// RevokeRefreshFamily revokes a family at now and, in the same
// transaction, records the family's revocation until tokensUntil, revokes
// the access tokens recorded for a legacy family and notifies the
// listeners (unless notices are off). Revoking a
// revoked family changes nothing; ErrNotFound if there is none.
func (s *Store) RevokeRefreshFamily(ctx context.Context, id string, now, tokensUntil time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE refresh_families SET revoked_at = $1
			WHERE id = $2 AND revoked_at IS NULL`, ts(now), id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Revoked before, or not there at all.
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM refresh_families WHERE id = $1)`, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return store.ErrNotFound
			}
			return nil
		}
		if err := revokeFamiliesTx(ctx, tx, familyByID, id, now, tokensUntil); err != nil {
			return err
		}
		return s.notifyTx(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("revoking refresh family %q: %w", id, err)
	}
	return nil
}

// familiesBy chooses the families revokeFamiliesTx records: those of one
// ID or those of one subject.
type familiesBy int

const (
	familyByID familiesBy = iota
	familiesBySubject
)

// The statements of revokeFamiliesTx: $1 is the revocation time (the
// families just revoked have it as revoked_at), $2 tokensUntil, $3 the
// family ID or the subject.
var revokeFamiliesQueries = map[familiesBy][2]string{
	familyByID: {
		`INSERT INTO family_revocations (family_id, expires_at, revoked_at)
		SELECT f.id, $2, $1 FROM refresh_families f WHERE f.revoked_at = $1 AND f.id = $3
		ON CONFLICT (family_id) DO NOTHING`,
		`INSERT INTO revocations (jti, expires_at, revoked_at)
		SELECT a.jti, a.expires_at, $1 FROM family_access_tokens a JOIN refresh_families f ON f.id = a.family_id
		WHERE a.expires_at > $1 AND f.revoked_at = $1 AND f.id = $2
		ON CONFLICT (jti) DO NOTHING`,
	},
	familiesBySubject: {
		`INSERT INTO family_revocations (family_id, expires_at, revoked_at)
		SELECT f.id, $2, $1 FROM refresh_families f WHERE f.revoked_at = $1 AND f.subject = $3
		ON CONFLICT (family_id) DO NOTHING`,
		`INSERT INTO revocations (jti, expires_at, revoked_at)
		SELECT a.jti, a.expires_at, $1 FROM family_access_tokens a JOIN refresh_families f ON f.id = a.family_id
		WHERE a.expires_at > $1 AND f.revoked_at = $1 AND f.subject = $2
		ON CONFLICT (jti) DO NOTHING`,
	},
}

// revokeFamiliesTx records, within a transaction, the revocations of the
// families just revoked at now that by and key choose: each family until
// tokensUntil, and the recorded access tokens of legacy ones by jti.
func revokeFamiliesTx(ctx context.Context, tx pgx.Tx, by familiesBy, key string, now, tokensUntil time.Time) error {
	q := revokeFamiliesQueries[by]
	if _, err := tx.Exec(ctx, q[0], ts(now), ts(tokensUntil), key); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, q[1], ts(now), key)
	return err
}
