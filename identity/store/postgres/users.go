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

const userColumns = `username, subject, password_hash, display_name, email, email_verified,
	scopes, roles, disabled, created_at, updated_at, entitlements`

// userColumnsOfU are userColumns of the users table named u.
const userColumnsOfU = `u.username, u.subject, u.password_hash, u.display_name, u.email, u.email_verified,
	u.scopes, u.roles, u.disabled, u.created_at, u.updated_at, u.entitlements`

// CreateUser stores a new user. ErrAlreadyExists if the username or the
// subject is taken; ErrSubjectDeleted if the subject was a deleted user's.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO users (`+userColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			u.Username, u.Subject, u.PasswordHash, u.DisplayName, u.Email, u.EmailVerified,
			textList(u.Scopes), textList(u.Roles), u.Disabled, ts(u.Created), ts(u.Updated),
			textList(u.Entitlements.Strings())); err != nil {
			return err
		}
		// After the insert, in a statement of its own: an insert that waited
		// on the unique index for a delete of the same subject to commit
		// sees the subject retired here (a check in the insert itself would
		// have read from before the delete).
		var retired bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deleted_subjects WHERE subject = $1)`, u.Subject).Scan(&retired); err != nil {
			return err
		}
		if retired {
			return store.ErrSubjectDeleted
		}
		return insertAuditChange(ctx, tx, u)
	})
	if isUnique(err) {
		return fmt.Errorf("creating user %q: %w", u.Username, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("creating user %q: %w", u.Username, err)
	}
	return nil
}

// UpdateUser replaces every field of the user with u.Username but its
// entitlements (UpdateEntitlements changes them). ErrNotFound if there is
// none; ErrAlreadyExists if u.Subject belongs to another user.
func (s *Store) UpdateUser(ctx context.Context, u store.User) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET subject = $1, password_hash = $2, display_name = $3,
			email = $4, email_verified = $5, scopes = $6, roles = $7, disabled = $8, created_at = $9, updated_at = $10
			WHERE username = $11`,
			u.Subject, u.PasswordHash, u.DisplayName, u.Email, u.EmailVerified,
			textList(u.Scopes), textList(u.Roles), u.Disabled, ts(u.Created), ts(u.Updated),
			u.Username)
		if err != nil {
			return err
		}
		if err := oneRow(tag); err != nil {
			return err
		}
		return insertAuditChange(ctx, tx, u)
	})
	if isUnique(err) {
		return fmt.Errorf("updating user %q: %w", u.Username, store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("updating user %q: %w", u.Username, err)
	}
	return nil
}

// DeleteUser deletes the user called username and its consents, ends its
// sessions as RevokeSubject does and retires its subject, in one
// transaction; a second (deletedLate) then ends what a login that read the
// user before the first committed stored meanwhile. It returns the user
// deleted; ErrNotFound if there is none. Should the second fail, the user
// is gone all the same: the error says so and names the subject (every
// grant reads the user, so nothing that login stored gets a token).
func (s *Store) DeleteUser(ctx context.Context, username string, now, tokensUntil time.Time) (store.User, error) {
	var u store.User
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if u, err = scanUser(tx.QueryRow(ctx, `DELETE FROM users WHERE username = $1 RETURNING `+userColumns, username)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM consents WHERE subject = $1`, u.Subject); err != nil {
			return err
		}
		if err := deleteFactorsTx(ctx, tx, u.Subject); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO deleted_subjects (subject, deleted_at) VALUES ($1, $2)
			ON CONFLICT (subject) DO NOTHING`, u.Subject, ts(now)); err != nil {
			return err
		}
		if err := s.revokeSubjectTx(ctx, tx, u.Subject, now, tokensUntil); err != nil {
			return err
		}
		return insertAuditChange(ctx, tx, u)
	})
	if err != nil {
		return store.User{}, fmt.Errorf("deleting user %q: %w", username, err)
	}
	if err := s.deletedLate(ctx, u.Subject, now, tokensUntil); err != nil {
		return u, fmt.Errorf("user %q (subject %q) is deleted, but ending what a login racing the delete stored failed (the subject's revocation still refuses that login's tokens while it lasts, and every grant finds no user): %w",
			username, u.Subject, err)
	}
	return u, nil
}

// deletedLate is DeleteUser's second pass, once its first is committed:
// as revokeSubjectLate, but for any authentication time, since the user
// is gone and every session, family, consent, code or second factor of its
// subject stored since is a login's that read it before: they all go.
func (s *Store) deletedLate(ctx context.Context, subject string, now, tokensUntil time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM consents WHERE subject = $1`, subject); err != nil {
			return err
		}
		if err := deleteFactorsTx(ctx, tx, subject); err != nil {
			return err
		}
		return s.revokeSubjectTx(ctx, tx, subject, now, tokensUntil)
	})
}

// User returns the user with this username. ErrNotFound if there is none.
func (s *Store) User(ctx context.Context, username string) (store.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE username = $1`, username))
	if err != nil {
		return store.User{}, fmt.Errorf("reading user %q: %w", username, err)
	}
	return u, nil
}

// UserBySubject returns the user with this subject id. ErrNotFound if there
// is none.
func (s *Store) UserBySubject(ctx context.Context, subject string) (store.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE subject = $1`, subject))
	if err != nil {
		return store.User{}, fmt.Errorf("reading user with subject %q: %w", subject, err)
	}
	return u, nil
}

// Users lists every user, ordered by username (byte order: the column's
// collation is "C").
func (s *Store) Users(ctx context.Context) ([]store.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY username`)
	if err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	users, err := collectUsers(rows)
	if err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	return users, nil
}

// UsersWithSubjects returns the users whose subject equals one of
// subjects without regard to ASCII case.
func (s *Store) UsersWithSubjects(ctx context.Context, subjects []string) ([]store.User, error) {
	if len(subjects) == 0 {
		return nil, nil
	}
	lowered := folded(subjects)
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE lower(subject) = ANY($1)`, lowered)
	if err != nil {
		return nil, fmt.Errorf("finding users by subject: %w", err)
	}
	users, err := collectUsers(rows)
	if err != nil {
		return nil, fmt.Errorf("finding users by subject: %w", err)
	}
	return users, nil
}

// DeletedSubjects returns those of subjects that were deleted users',
// without regard to ASCII case, as they were stored.
func (s *Store) DeletedSubjects(ctx context.Context, subjects []string) ([]string, error) {
	if len(subjects) == 0 {
		return nil, nil
	}
	lowered := folded(subjects)
	rows, err := s.pool.Query(ctx, `SELECT subject FROM deleted_subjects WHERE lower(subject) = ANY($1)`, lowered)
	if err != nil {
		return nil, fmt.Errorf("finding deleted subjects: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finding deleted subjects: %w", err)
	}
	return found, nil
}

// folded are subjects folded as lower() folds them under COLLATE "C"
// (ASCII alone).
func folded(subjects []string) []string {
	lowered := make([]string, len(subjects))
	for i, sub := range subjects {
		lowered[i] = store.FoldASCII(sub)
	}
	return lowered
}

// collectUsers reads the users of rows, and closes them.
func collectUsers(rows pgx.Rows) ([]store.User, error) {
	defer rows.Close()
	var users []store.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

// scanUser reads the userColumns of one row; store.ErrNotFound if there is
// no row.
func scanUser(row pgx.Row) (store.User, error) {
	var f userFields
	err := row.Scan(f.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.User{}, store.ErrNotFound
	}
	if err != nil {
		return store.User{}, err
	}
	return f.user()
}

// userFields are the destinations of userColumns, in their order, that
// user decodes.
type userFields struct {
	u                store.User
	created, updated pgtype.Timestamptz
	pairs            []string
}

func (f *userFields) dest() []any {
	return []any{&f.u.Username, &f.u.Subject, &f.u.PasswordHash, &f.u.DisplayName, &f.u.Email, &f.u.EmailVerified,
		&f.u.Scopes, &f.u.Roles, &f.u.Disabled, &f.created, &f.updated, &f.pairs}
}

// user decodes the scanned fields.
func (f *userFields) user() (store.User, error) {
	u := f.u
	u.Scopes, u.Roles = nonEmpty(u.Scopes), nonEmpty(u.Roles)
	var err error
	if u.Entitlements, err = decodeSet(f.pairs); err != nil {
		return store.User{}, err
	}
	u.Created, u.Updated = fromTS(f.created), fromTS(f.updated)
	return u, nil
}

// ReplacePasswordHash is a compare-and-swap of a user's password hash in
// one statement.
func (s *Store) ReplacePasswordHash(ctx context.Context, username, oldHash, newHash string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE users SET password_hash = $1, updated_at = $2
		WHERE username = $3 AND password_hash = $4`, newHash, ts(now), username, oldHash)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("replacing the password hash of %q: %w", username, err)
	}
	return nil
}
