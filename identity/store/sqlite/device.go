package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// The device authorization grant's role (store.DeviceCodes).

const deviceColumns = `hash, user_code_hash, client_id, scopes, created_at, expires_at, retain_until,
	interval_ms, last_polled_at, state, decided_at, subject, auth_time, session_id, used_at,
	family_id, access_token_id, access_token_expires_at, asked_entitlements, amr`

// PutDeviceCode stores a new, pending authorization.
func (s *Store) PutDeviceCode(ctx context.Context, d store.DeviceCode) error {
	if len(d.Hash) == 0 || len(d.UserCodeHash) == 0 {
		return errors.New("storing device code: empty hash")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO device_codes (`+deviceColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL, '', NULL, '', NULL, '', '', NULL, ?, '[]')`,
		d.Hash, d.UserCodeHash, d.ClientID, encodeList(d.Scopes), millis(d.Created), millis(d.ExpiresAt),
		millis(d.RetainUntil), d.Interval.Milliseconds(), store.DevicePending, encodeAsked(d.AskedEntitlements))
	if isUnique(err) {
		return fmt.Errorf("storing device code: %w", store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("storing device code: %w", err)
	}
	return nil
}

func scanDevice(row rowScanner) (store.DeviceCode, error) {
	var (
		d                                     store.DeviceCode
		created, exp, retain, polled, decided sql.NullInt64
		authTime, used, atExp                 sql.NullInt64
		interval                              int64
		scopes, amr                           string
		asked                                 sql.NullString
	)
	if err := row.Scan(&d.Hash, &d.UserCodeHash, &d.ClientID, &scopes, &created, &exp, &retain, &interval,
		&polled, &d.State, &decided, &d.Subject, &authTime, &d.SessionID, &used,
		&d.FamilyID, &d.AccessTokenID, &atExp, &asked, &amr); err != nil {
		return store.DeviceCode{}, err
	}
	d.Created, d.ExpiresAt, d.RetainUntil = fromMillis(created), fromMillis(exp), fromMillis(retain)
	d.Interval = time.Duration(interval) * time.Millisecond
	d.LastPolledAt, d.DecidedAt, d.AuthTime = fromMillis(polled), fromMillis(decided), fromMillis(authTime)
	d.UsedAt, d.AccessTokenExpiresAt = fromMillis(used), fromMillis(atExp)
	var err error
	if d.Scopes, err = decodeList(scopes); err != nil {
		return store.DeviceCode{}, err
	}
	if d.AMR, err = decodeList(amr); err != nil {
		return store.DeviceCode{}, err
	}
	if asked.Valid {
		set, err := decodeSet(asked.String)
		if err != nil {
			return store.DeviceCode{}, err
		}
		d.AskedEntitlements = &set
	}
	return d, nil
}

// encodeAsked is the asked_entitlements of a device authorization: NULL
// when its request asked for no pairs, else encodeSet's form ("[]" when
// it asked for none of them).
func encodeAsked(s *entitle.Set) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: encodeSet(*s), Valid: true}
}

func (s *Store) deviceBy(ctx context.Context, column string, hash []byte) (store.DeviceCode, error) {
	d, err := scanDevice(s.r.QueryRowContext(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE `+column+` = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.DeviceCode{}, fmt.Errorf("reading device code: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.DeviceCode{}, fmt.Errorf("reading device code: %w", err)
	}
	return d, nil
}

// DeviceCode returns the authorization with this device-code hash.
func (s *Store) DeviceCode(ctx context.Context, hash []byte) (store.DeviceCode, error) {
	return s.deviceBy(ctx, "hash", hash)
}

// DeviceCodeByUserCode returns the authorization with this user-code hash.
func (s *Store) DeviceCodeByUserCode(ctx context.Context, userCodeHash []byte) (store.DeviceCode, error) {
	return s.deviceBy(ctx, "user_code_hash", userCodeHash)
}

// PollDeviceCode records a poll: one UPDATE that only a poll after the
// interval passes, else one that slows the client down, in one write.
func (s *Store) PollDeviceCode(ctx context.Context, hash []byte, now time.Time) (store.DeviceCode, error) {
	var (
		d    store.DeviceCode
		slow bool
	)
	n := millis(now)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		d, err = scanDevice(tx.QueryRowContext(ctx, `UPDATE device_codes SET last_polled_at = ?
			WHERE hash = ? AND (last_polled_at IS NULL OR last_polled_at + interval_ms - MIN(interval_ms / 5, 1000) <= ?)
			RETURNING `+deviceColumns, n, hash, n))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		slow = true
		most := store.MaxPollInterval.Milliseconds()
		d, err = scanDevice(tx.QueryRowContext(ctx, `UPDATE device_codes SET last_polled_at = ?,
			interval_ms = MIN(interval_ms + ?, ?) WHERE hash = ? AND interval_ms < ? RETURNING `+deviceColumns,
			n, store.SlowDownStep.Milliseconds(), most, hash, most))
		if errors.Is(err, sql.ErrNoRows) {
			// At the most interval already, or not there: nothing to write.
			d, err = scanDevice(tx.QueryRowContext(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE hash = ?`, hash))
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
		}
		return err
	})
	switch {
	case err != nil:
		return store.DeviceCode{}, fmt.Errorf("polling device code: %w", err)
	case slow:
		return d, fmt.Errorf("polling device code: %w", store.ErrSlowDown)
	}
	return d, nil
}

// DecideDeviceCode records the user's decision: one UPDATE that only a
// pending, unexpired authorization passes.
func (s *Store) DecideDeviceCode(ctx context.Context, userCodeHash []byte, now time.Time, dd store.DeviceDecision) (store.DeviceCode, error) {
	state, scopes := store.DeviceDenied, ""
	if dd.Approved {
		state, scopes = store.DeviceApproved, encodeList(dd.Scopes)
	}
	d, err := scanDevice(s.w.QueryRowContext(ctx, `UPDATE device_codes SET state = ?, decided_at = ?,
		subject = ?, auth_time = ?, session_id = ?, scopes = CASE WHEN ? = '' THEN scopes ELSE ? END, amr = ?
		WHERE user_code_hash = ? AND state = ? AND expires_at > ? RETURNING `+deviceColumns,
		state, millis(now), dd.Subject, millis(dd.AuthTime), dd.SessionID, scopes, scopes, encodeList(dd.AMR),
		userCodeHash, store.DevicePending, millis(now)))
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.DeviceCodeByUserCode(ctx, userCodeHash); err != nil {
			return store.DeviceCode{}, fmt.Errorf("deciding device code: %w", err)
		}
		return store.DeviceCode{}, fmt.Errorf("deciding device code: %w", store.ErrDeviceCodeDecided)
	}
	if err != nil {
		return store.DeviceCode{}, fmt.Errorf("deciding device code: %w", err)
	}
	return d, nil
}

// ConsumeDeviceCode uses an approved authorization: one UPDATE that only
// an approved, unused one passes.
func (s *Store) ConsumeDeviceCode(ctx context.Context, hash []byte, now time.Time, issued store.CodeIssue) (store.DeviceCode, error) {
	d, err := scanDevice(s.w.QueryRowContext(ctx, `UPDATE device_codes SET used_at = ?, family_id = ?,
		access_token_id = ?, access_token_expires_at = ?
		WHERE hash = ? AND state = ? AND used_at IS NULL RETURNING `+deviceColumns,
		millis(now), issued.FamilyID, issued.AccessTokenID, millis(issued.AccessTokenExpiresAt), hash, store.DeviceApproved))
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := s.DeviceCode(ctx, hash)
		switch {
		case err != nil:
			return store.DeviceCode{}, fmt.Errorf("using device code: %w", err)
		case !cur.UsedAt.IsZero():
			return cur, fmt.Errorf("using device code: %w", store.ErrCodeUsed)
		}
		return cur, fmt.Errorf("using device code: %w", store.ErrDeviceCodeNotApproved)
	}
	if err != nil {
		return store.DeviceCode{}, fmt.Errorf("using device code: %w", err)
	}
	return d, nil
}

// DeleteExpiredDeviceCodes removes the authorizations past their
// retention.
func (s *Store) DeleteExpiredDeviceCodes(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM device_codes WHERE retain_until <= ?`, millis(now))
	if err != nil {
		return 0, fmt.Errorf("deleting expired device codes: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("deleting expired device codes: %w", err)
	}
	return n, nil
}

var _ store.DeviceStore = (*Store)(nil)
