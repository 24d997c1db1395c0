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

// The users' second factors (store.MFA).

// TOTP returns the subject's TOTP factor. ErrNotFound if it has none.
func (s *Store) TOTP(ctx context.Context, subject string) (store.TOTPFactor, error) {
	f := store.TOTPFactor{Subject: subject}
	var created pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT secret, last_step, created_at FROM mfa_totp WHERE subject = $1`, subject).
		Scan(&f.Secret, &f.LastStep, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.TOTPFactor{}, fmt.Errorf("reading the TOTP factor of %q: %w", subject, err)
	}
	f.Created = fromTS(created)
	return f, nil
}

// PutTOTP stores f as its subject's TOTP factor, replacing any.
func (s *Store) PutTOTP(ctx context.Context, f store.TOTPFactor) error {
	if len(f.Secret) == 0 || f.Created.IsZero() {
		return fmt.Errorf("storing the TOTP factor of %q: no secret, or no time of enrolment", f.Subject)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO mfa_totp (subject, secret, last_step, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (subject) DO UPDATE SET secret = excluded.secret, last_step = excluded.last_step, created_at = excluded.created_at`,
		f.Subject, f.Secret, f.LastStep, ts(f.Created))
	if err != nil {
		return fmt.Errorf("storing the TOTP factor of %q: %w", f.Subject, err)
	}
	return nil
}

// AdvanceTOTP sets the factor's last step to step if it is below it and
// the factor's secret is secret, and reports whether it did: one UPDATE,
// whose row lock makes a second request with the same step wait and then
// find it no longer below (or the secret replaced). ErrNotFound if the
// subject has no factor.
func (s *Store) AdvanceTOTP(ctx context.Context, subject string, secret []byte, step int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE mfa_totp SET last_step = $2 WHERE subject = $1 AND last_step < $2 AND secret = $3`, subject, step, secret)
	if err != nil {
		return false, fmt.Errorf("advancing the TOTP factor of %q: %w", subject, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	var one int
	err = s.pool.QueryRow(ctx, `SELECT 1 FROM mfa_totp WHERE subject = $1`, subject).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("advancing the TOTP factor of %q: %w", subject, err)
	}
	return false, nil
}

// DeleteTOTP removes the subject's TOTP factor. ErrNotFound if it has none.
func (s *Store) DeleteTOTP(ctx context.Context, subject string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mfa_totp WHERE subject = $1`, subject)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("deleting the TOTP factor of %q: %w", subject, err)
	}
	return nil
}

// recoveryLock takes, in tx, the lock of the subject's recovery codes (a
// transaction-scoped advisory lock): at READ COMMITTED, two replacements
// racing would each delete only the rows committed before they began, and
// both new sets would stay.
func recoveryLock(ctx context.Context, tx pgx.Tx, subject string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('gatehouse mfa_recovery ' || $1, 0))`, subject)
	return err
}

// ResetMFA removes the subject's TOTP factor and recovery codes, and
// stores ctx's audit change, in one transaction, under the lock of the
// subject's codes (recoveryLock).
func (s *Store) ResetMFA(ctx context.Context, subject string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := recoveryLock(ctx, tx, subject); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_totp WHERE subject = $1`, subject); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery WHERE subject = $1`, subject); err != nil {
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
// and stores ctx's audit change, in one transaction that first takes the
// lock of the subject's codes (recoveryLock).
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, subject string, hashes [][]byte, now time.Time) error {
	if now.IsZero() {
		return fmt.Errorf("replacing the recovery codes of %q: no time", subject)
	}
	for _, h := range hashes {
		if len(h) == 0 {
			return fmt.Errorf("replacing the recovery codes of %q: an empty hash", subject)
		}
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := recoveryLock(ctx, tx, subject); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery WHERE subject = $1`, subject); err != nil {
			return err
		}
		if len(hashes) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO mfa_recovery (subject, hash, created_at)
				SELECT $1, h, $3 FROM unnest($2::bytea[]) AS h ON CONFLICT DO NOTHING`, subject, hashes, ts(now)); err != nil {
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
	rows, err := s.pool.Query(ctx, `SELECT hash FROM mfa_recovery WHERE subject = $1`, subject)
	if err != nil {
		return nil, fmt.Errorf("reading the recovery codes of %q: %w", subject, err)
	}
	hashes, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("reading the recovery codes of %q: %w", subject, err)
	}
	return hashes, nil
}

// SpendRecoveryCode deletes the subject's recovery code with hash and
// reports whether there was one.
func (s *Store) SpendRecoveryCode(ctx context.Context, subject string, hash []byte) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mfa_recovery WHERE subject = $1 AND hash = $2`, subject, hash)
	if err != nil {
		return false, fmt.Errorf("spending a recovery code of %q: %w", subject, err)
	}
	return tag.RowsAffected() == 1, nil
}

// deleteFactorsTx deletes every second factor of subject (DeleteUser).
func deleteFactorsTx(ctx context.Context, tx pgx.Tx, subject string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM mfa_totp WHERE subject = $1`, subject); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM mfa_recovery WHERE subject = $1`, subject); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM passkeys WHERE subject = $1`, subject)
	return err
}
