package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// The users' passkeys (store.Passkeys).

const passkeyColumns = `id, subject, name, public_key, sign_count, aaguid, transports, backup_eligible, backup_state, created_at, last_used_at`

// scanPasskey reads a row of passkeyColumns.
func scanPasskey(row interface{ Scan(...any) error }) (store.Passkey, error) {
	var (
		p                 store.Passkey
		transports        string
		created, lastUsed sql.NullInt64
	)
	err := row.Scan(&p.ID, &p.Subject, &p.Name, &p.PublicKey, &p.SignCount, &p.AAGUID, &transports,
		&p.BackupEligible, &p.BackupState, &created, &lastUsed)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Passkey{}, store.ErrNotFound
	}
	if err != nil {
		return store.Passkey{}, err
	}
	if p.Transports, err = decodeList(transports); err != nil {
		return store.Passkey{}, err
	}
	if len(p.AAGUID) == 0 {
		p.AAGUID = nil
	}
	p.Created, p.LastUsed = fromMillis(created), fromMillis(lastUsed)
	return p, nil
}

// AddPasskey stores p, unless its subject has store.MaxPasskeys already:
// the count and the insert are one write transaction, which SQLite
// serializes.
func (s *Store) AddPasskey(ctx context.Context, p store.Passkey) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("adding a passkey of %q: %w", p.Subject, err)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM passkeys WHERE subject = ?`, p.Subject).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxPasskeys {
			return fmt.Errorf("%w (at most %d)", store.ErrTooManyPasskeys, store.MaxPasskeys)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO passkeys (`+passkeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Subject, p.Name, p.PublicKey, int64(p.SignCount), blob(p.AAGUID), encodeList(p.Transports),
			p.BackupEligible, p.BackupState, millis(p.Created), millis(p.LastUsed))
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("adding a passkey of %q: %w", p.Subject, err)
	}
	return nil
}

// Passkeys lists the subject's passkeys, oldest first.
func (s *Store) Passkeys(ctx context.Context, subject string) ([]store.Passkey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE subject = ? ORDER BY created_at, id`, subject)
	if err != nil {
		return nil, fmt.Errorf("reading the passkeys of %q: %w", subject, err)
	}
	defer rows.Close()
	var out []store.Passkey
	for rows.Next() {
		p, err := scanPasskey(rows)
		if err != nil {
			return nil, fmt.Errorf("reading the passkeys of %q: %w", subject, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the passkeys of %q: %w", subject, err)
	}
	return out, nil
}

// PasskeyByID returns the passkey with credential id id. ErrNotFound if
// there is none.
func (s *Store) PasskeyByID(ctx context.Context, id []byte) (store.Passkey, error) {
	p, err := scanPasskey(s.r.QueryRowContext(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE id = ?`, id))
	if err != nil {
		return store.Passkey{}, fmt.Errorf("reading a passkey: %w", err)
	}
	return p, nil
}

// UsePasskey sets the passkey's count to signCount and its last use to
// now if signCount is above the stored count or both are 0, and reports
// whether it did. ErrNotFound if there is no such passkey.
func (s *Store) UsePasskey(ctx context.Context, id []byte, signCount uint32, now time.Time) (bool, error) {
	if now.IsZero() {
		return false, errors.New("using a passkey: no time")
	}
	var used bool
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE passkeys SET sign_count = ?1, last_used_at = ?2
			WHERE id = ?3 AND (sign_count < ?1 OR (sign_count = 0 AND ?1 = 0))`, int64(signCount), millis(now), id)
		if err != nil {
			return err
		}
		if err := oneRow(res); err == nil {
			used = true
			return nil
		}
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM passkeys WHERE id = ?`, id).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("using a passkey: %w", err)
	}
	return used, nil
}

// RenamePasskey sets the name of the subject's passkey id.
func (s *Store) RenamePasskey(ctx context.Context, subject string, id []byte, name string) error {
	if len(name) > store.MaxPasskeyName {
		return fmt.Errorf("renaming a passkey of %q: a name of %d bytes (at most %d)", subject, len(name), store.MaxPasskeyName)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE passkeys SET name = ? WHERE subject = ? AND id = ?`, name, subject, id)
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return fmt.Errorf("renaming a passkey of %q: %w", subject, err)
	}
	return nil
}

// DeletePasskey removes the subject's passkey id.
func (s *Store) DeletePasskey(ctx context.Context, subject string, id []byte) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM passkeys WHERE subject = ? AND id = ?`, subject, id)
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return fmt.Errorf("deleting a passkey of %q: %w", subject, err)
	}
	return nil
}
