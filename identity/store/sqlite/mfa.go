package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// The users' second factors (store.MFA).

// TOTP returns the subject's TOTP factor. ErrNotFound if it has none.
func (s *Store) TOTP(ctx context.Context, subject string) (store.TOTPFactor, error) {
	f := store.TOTPFactor{Subject: subject}
	var created sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT secret, last_step, created_at FROM mfa_totp WHERE subject = ?`, subject).
		Scan(&f.Secret, &f.LastStep, &created)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.TOTPFactor{}, fmt.Errorf("reading the TOTP factor of %q: %w", subject, err)
	}
	f.Created = fromMillis(created)
	return f, nil
}

// PutTOTP stores f as its subject's TOTP factor, replacing any.
func (s *Store) PutTOTP(ctx context.Context, f store.TOTPFactor) error {
	if len(f.Secret) == 0 || f.Created.IsZero() {
		return fmt.Errorf("storing the TOTP factor of %q: no secret, or no time of enrolment", f.Subject)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO mfa_totp (subject, secret, last_step, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (subject) DO UPDATE SET secret = excluded.secret, last_step = excluded.last_step, created_at = excluded.created_at`,
		f.Subject, f.Secret, f.LastStep, millis(f.Created))
	if err != nil {
		return fmt.Errorf("storing the TOTP factor of %q: %w", f.Subject, err)
	}
	return nil
}

// AdvanceTOTP sets the factor's last step to step if it is below it and
// the factor's secret is secret, and reports whether it did. ErrNotFound
// if the subject has no factor.
func (s *Store) AdvanceTOTP(ctx context.Context, subject string, secret []byte, step int64) (bool, error) {
	var advanced bool
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var last int64
		var current []byte
		if err := tx.QueryRowContext(ctx, `SELECT last_step, secret FROM mfa_totp WHERE subject = ?`, subject).Scan(&last, &current); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if last >= step || !bytes.Equal(current, secret) {
			return nil
		}
		advanced = true
		_, err := tx.ExecContext(ctx, `UPDATE mfa_totp SET last_step = ? WHERE subject = ?`, step, subject)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("advancing the TOTP factor of %q: %w", subject, err)
	}
	return advanced, nil
}

// DeleteTOTP removes the subject's TOTP factor. ErrNotFound if it has none.
func (s *Store) DeleteTOTP(ctx context.Context, subject string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM mfa_totp WHERE subject = ?`, subject)
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return fmt.Errorf("deleting the TOTP factor of %q: %w", subject, err)
	}
	return nil
}

// ResetMFA removes the subject's TOTP factor and recovery codes, and
// stores ctx's audit change, in one transaction.
func (s *Store) ResetMFA(ctx context.Context, subject string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_totp WHERE subject = ?`, subject); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_recovery WHERE subject = ?`, subject); err != nil {
			return err
		}
		return insertAuditChange(ctx, tx, store.User{Subject: subject})
	})
	if err != nil {
		return fmt.Errorf("removing the second factors of %q: %w", subject, err)
	}
	return nil
}

// ReplaceRecoveryCodes replaces the subject's recovery codes with hashes,
// and stores ctx's audit change, in one transaction.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, subject string, hashes [][]byte, now time.Time) error {
	if now.IsZero() {
		return fmt.Errorf("replacing the recovery codes of %q: no time", subject)
	}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_recovery WHERE subject = ?`, subject); err != nil {
			return err
		}
		for _, h := range hashes {
			if len(h) == 0 {
				return errors.New("an empty hash")
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO mfa_recovery (subject, hash, created_at) VALUES (?, ?, ?)
				ON CONFLICT DO NOTHING`, subject, h, millis(now)); err != nil {
				return err
			}
		}
		return insertAuditChange(ctx, tx, store.User{Subject: subject})
	})
	if err != nil {
		return fmt.Errorf("replacing the recovery codes of %q: %w", subject, err)
	}
	return nil
}

// RecoveryCodes returns the hashes of the subject's unspent recovery codes.
func (s *Store) RecoveryCodes(ctx context.Context, subject string) ([][]byte, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT hash FROM mfa_recovery WHERE subject = ?`, subject)
	if err != nil {
		return nil, fmt.Errorf("reading the recovery codes of %q: %w", subject, err)
	}
	defer rows.Close()
	var hashes [][]byte
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			return nil, fmt.Errorf("reading the recovery codes of %q: %w", subject, err)
		}
		hashes = append(hashes, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the recovery codes of %q: %w", subject, err)
	}
	return hashes, nil
}

// SpendRecoveryCode deletes the subject's recovery code with hash and
// reports whether there was one.
func (s *Store) SpendRecoveryCode(ctx context.Context, subject string, hash []byte) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM mfa_recovery WHERE subject = ? AND hash = ?`, subject, hash)
	if err != nil {
		return false, fmt.Errorf("spending a recovery code of %q: %w", subject, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("spending a recovery code of %q: %w", subject, err)
	}
	return n == 1, nil
}

// deleteFactorsTx deletes every second factor of subject (DeleteUser).
func deleteFactorsTx(ctx context.Context, tx *sql.Tx, subject string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_totp WHERE subject = ?`, subject); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_recovery WHERE subject = ?`, subject); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM passkeys WHERE subject = ?`, subject)
	return err
}
