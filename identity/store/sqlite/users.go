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

const userColumns = `username, subject, password_hash, display_name, email, email_verified,
	scopes, roles, disabled, created_at, updated_at, entitlements`

// userColumnsOfU are userColumns of the users table named u.
const userColumnsOfU = `u.username, u.subject, u.password_hash, u.display_name, u.email, u.email_verified,
	u.scopes, u.roles, u.disabled, u.created_at, u.updated_at, u.entitlements`

// userQuery and userBySubjectQuery read a user by username or subject.
const (
	userQuery          = `SELECT ` + userColumns + ` FROM users WHERE username = ?`
	userBySubjectQuery = `SELECT ` + userColumns + ` FROM users WHERE subject = ?`
)

// CreateUser stores a new user. ErrAlreadyExists if the username or the
// subject is taken; ErrSubjectDeleted if the subject was a deleted user's.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO users (`+userColumns+`)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
			WHERE NOT EXISTS (SELECT 1 FROM deleted_subjects WHERE subject = ?)`,
			u.Username, u.Subject, u.PasswordHash, u.DisplayName, u.Email, u.EmailVerified,
			encodeList(u.Scopes), encodeList(u.Roles), u.Disabled, millis(u.Created), millis(u.Updated),
			encodeSet(u.Entitlements), u.Subject)
		if err != nil {
			return err
		}
		if oneRow(res) != nil {
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
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET subject = ?, password_hash = ?, display_name = ?,
			email = ?, email_verified = ?, scopes = ?, roles = ?, disabled = ?, created_at = ?, updated_at = ?
			WHERE username = ?`,
			u.Subject, u.PasswordHash, u.DisplayName, u.Email, u.EmailVerified,
			encodeList(u.Scopes), encodeList(u.Roles), u.Disabled, millis(u.Created), millis(u.Updated),
			u.Username)
		if err != nil {
			return err
		}
		if err := oneRow(res); err != nil {
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

// DeleteUser deletes the user called username, its consents and its
// second factors, ends its sessions as RevokeSubject does, and retires its
// subject, in one transaction. It returns the user deleted; ErrNotFound if there is none.
func (s *Store) DeleteUser(ctx context.Context, username string, now, tokensUntil time.Time) (store.User, error) {
	var u store.User
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if u, err = scanUser(tx.QueryRowContext(ctx, `DELETE FROM users WHERE username = ? RETURNING `+userColumns, username)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM consents WHERE subject = ?`, u.Subject); err != nil {
			return err
		}
		if err := deleteFactorsTx(ctx, tx, u.Subject); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO deleted_subjects (subject, deleted_at) VALUES (?, ?)
			ON CONFLICT (subject) DO NOTHING`, u.Subject, millis(now)); err != nil {
			return err
		}
		if err := revokeSubjectTx(ctx, tx, u.Subject, now, tokensUntil); err != nil {
			return err
		}
		return insertAuditChange(ctx, tx, u)
	})
	if err != nil {
		return store.User{}, fmt.Errorf("deleting user %q: %w", username, err)
	}
	return u, nil
}

// User returns the user with this username. ErrNotFound if there is none.
func (s *Store) User(ctx context.Context, username string) (store.User, error) {
	row := s.q.user.QueryRowContext(ctx, username)
	u, err := scanUser(row)
	if err != nil {
		return store.User{}, fmt.Errorf("reading user %q: %w", username, err)
	}
	return u, nil
}

// UserBySubject returns the user with this subject id. ErrNotFound if there
// is none.
func (s *Store) UserBySubject(ctx context.Context, subject string) (store.User, error) {
	row := s.q.userBySubject.QueryRowContext(ctx, subject)
	u, err := scanUser(row)
	if err != nil {
		return store.User{}, fmt.Errorf("reading user with subject %q: %w", subject, err)
	}
	return u, nil
}

// Users lists every user, ordered by username (byte order).
func (s *Store) Users(ctx context.Context) ([]store.User, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY username`)
	if err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	users, err := collectUsers(rows)
	if err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	return users, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// UsersWithSubjects returns the users whose subject equals one of
// subjects without regard to ASCII case.
func (s *Store) UsersWithSubjects(ctx context.Context, subjects []string) ([]store.User, error) {
	if len(subjects) == 0 {
		return nil, nil
	}
	lowered := foldedArgs(subjects)
	rows, err := s.r.QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE lower(subject) IN (?`+strings.Repeat(", ?", len(lowered)-1)+`)`, lowered...)
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
	lowered := foldedArgs(subjects)
	rows, err := s.r.QueryContext(ctx, `SELECT subject FROM deleted_subjects WHERE lower(subject) IN (?`+strings.Repeat(", ?", len(lowered)-1)+`)`, lowered...)
	if err != nil {
		return nil, fmt.Errorf("finding deleted subjects: %w", err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var sub string
		if err := rows.Scan(&sub); err != nil {
			return nil, fmt.Errorf("finding deleted subjects: %w", err)
		}
		found = append(found, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding deleted subjects: %w", err)
	}
	return found, nil
}

// foldedArgs are subjects folded as the SQL lower() folds them (ASCII
// alone), as bind arguments.
func foldedArgs(subjects []string) []any {
	lowered := make([]any, len(subjects))
	for i, sub := range subjects {
		lowered[i] = store.FoldASCII(sub)
	}
	return lowered
}

// collectUsers reads the users of rows, and closes them.
func collectUsers(rows *sql.Rows) ([]store.User, error) {
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
func scanUser(row scanner) (store.User, error) {
	var f userFields
	err := row.Scan(f.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
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
	u                    store.User
	scopes, roles, pairs string
	created, updated     sql.NullInt64
}

func (f *userFields) dest() []any {
	return []any{&f.u.Username, &f.u.Subject, &f.u.PasswordHash, &f.u.DisplayName, &f.u.Email, &f.u.EmailVerified,
		&f.scopes, &f.roles, &f.u.Disabled, &f.created, &f.updated, &f.pairs}
}

// user decodes the scanned fields.
func (f *userFields) user() (store.User, error) {
	u := f.u
	var err error
	if u.Scopes, err = decodeList(f.scopes); err != nil {
		return store.User{}, fmt.Errorf("scopes: %w", err)
	}
	if u.Roles, err = decodeList(f.roles); err != nil {
		return store.User{}, fmt.Errorf("roles: %w", err)
	}
	if u.Entitlements, err = decodeSet(f.pairs); err != nil {
		return store.User{}, err
	}
	u.Created, u.Updated = fromMillis(f.created), fromMillis(f.updated)
	return u, nil
}

// ReplacePasswordHash is a compare-and-swap of a user's password hash in
// one statement.
func (s *Store) ReplacePasswordHash(ctx context.Context, username, oldHash, newHash string, now time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE users SET password_hash = ?, updated_at = ?
		WHERE username = ? AND password_hash = ?`, newHash, millis(now), username, oldHash)
	if err != nil {
		return fmt.Errorf("replacing the password hash of %q: %w", username, err)
	}
	if err := oneRow(res); err != nil {
		return fmt.Errorf("replacing the password hash of %q: %w", username, err)
	}
	return nil
}
