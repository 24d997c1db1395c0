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

// The users' passkeys (store.Passkeys).

const passkeyColumns = `id, subject, name, public_key, sign_count, aaguid, transports, backup_eligible, backup_state, created_at, last_used_at`

// scanPasskey reads a row of passkeyColumns.
func scanPasskey(row pgx.Row) (store.Passkey, error) {
	var (
		p                 store.Passkey
		count             int64
		created, lastUsed pgtype.Timestamptz
	)
	err := row.Scan(&p.ID, &p.Subject, &p.Name, &p.PublicKey, &count, &p.AAGUID, &p.Transports,
		&p.BackupEligible, &p.BackupState, &created, &lastUsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Passkey{}, store.ErrNotFound
	}
	if err != nil {
		return store.Passkey{}, err
	}
	if count < 0 || count > 1<<32-1 {
		return store.Passkey{}, fmt.Errorf("a sign count of %d", count)
	}
	p.SignCount = uint32(count)
	p.AAGUID, p.Transports = nonEmpty(p.AAGUID), nonEmpty(p.Transports)
	p.Created, p.LastUsed = fromTS(created), fromTS(lastUsed)
	return p, nil
}

// AddPasskey stores p, unless its subject has store.MaxPasskeys already,
// in one transaction that first takes a lock of the subject's passkeys
// (a transaction-scoped advisory lock): at READ COMMITTED, two adds
// racing would each count the rows committed before them.
func (s *Store) AddPasskey(ctx context.Context, p store.Passkey) error {
	if err := p.Check(); err != nil {
		return fmt.Errorf("adding a passkey of %q: %w", p.Subject, err)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('gatehouse passkeys ' || $1, 0))`, p.Subject); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM passkeys WHERE subject = $1`, p.Subject).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxPasskeys {
			return fmt.Errorf("%w (at most %d)", store.ErrTooManyPasskeys, store.MaxPasskeys)
		}
		_, err := tx.Exec(ctx, `INSERT INTO passkeys (`+passkeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			p.ID, p.Subject, p.Name, p.PublicKey, int64(p.SignCount), blob(p.AAGUID), textList(p.Transports),
			p.BackupEligible, p.BackupState, ts(p.Created), ts(p.LastUsed))
		return err
	})
	if isUnique(err) {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		return fmt.Errorf("adding a passkey of %q: %w", p.Subject, err)
	}
	return nil
}

// Passkeys lists the subject's passkeys, oldest first.
func (s *Store) Passkeys(ctx context.Context, subject string) ([]store.Passkey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE subject = $1 ORDER BY created_at, id`, subject)
	if err != nil {
		return nil, fmt.Errorf("reading the passkeys of %q: %w", subject, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Passkey, error) { return scanPasskey(row) })
	if err != nil {
		return nil, fmt.Errorf("reading the passkeys of %q: %w", subject, err)
	}
	return nonEmpty(out), nil
}

// PasskeyByID returns the passkey with credential id id. ErrNotFound if
// there is none.
func (s *Store) PasskeyByID(ctx context.Context, id []byte) (store.Passkey, error) {
	p, err := scanPasskey(s.pool.QueryRow(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE id = $1`, id))
	if err != nil {
		return store.Passkey{}, fmt.Errorf("reading a passkey: %w", err)
	}
	return p, nil
}

// UsePasskey sets the passkey's count to signCount and its last use to
// now if signCount is above the stored count or both are 0, and reports
// whether it did: one UPDATE, whose row lock makes a second use with the
// same count wait and then find it no longer above. ErrNotFound if there
// is no such passkey.
func (s *Store) UsePasskey(ctx context.Context, id []byte, signCount uint32, now time.Time) (bool, error) {
	if now.IsZero() {
		return false, errors.New("using a passkey: no time")
	}
	tag, err := s.pool.Exec(ctx, `UPDATE passkeys SET sign_count = $2, last_used_at = $3
		WHERE id = $1 AND (sign_count < $2 OR (sign_count = 0 AND $2 = 0))`, id, int64(signCount), ts(now))
	if err != nil {
		return false, fmt.Errorf("using a passkey: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM passkeys WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("using a passkey: %w", err)
	}
	return false, nil
}

// RenamePasskey sets the name of the subject's passkey id.
func (s *Store) RenamePasskey(ctx context.Context, subject string, id []byte, name string) error {
	if len(name) > store.MaxPasskeyName {
		return fmt.Errorf("renaming a passkey of %q: a name of %d bytes (at most %d)", subject, len(name), store.MaxPasskeyName)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE passkeys SET name = $3 WHERE subject = $1 AND id = $2`, subject, id, name)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("renaming a passkey of %q: %w", subject, err)
	}
	return nil
}

// DeletePasskey removes the subject's passkey id.
func (s *Store) DeletePasskey(ctx context.Context, subject string, id []byte) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM passkeys WHERE subject = $1 AND id = $2`, subject, id)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("deleting a passkey of %q: %w", subject, err)
	}
	return nil
}
