package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// The device authorization grant's role (store.DeviceCodes). Each
// compare-and-swap is one UPDATE whose WHERE only the winning state
// passes: of concurrent callers, on any number of instances, the first to
// update the row holds its lock until it commits, and the others, under
// READ COMMITTED, check their WHERE again on the row it committed.

const deviceColumns = `hash, user_code_hash, client_id, scopes, created_at, expires_at, retain_until,
	interval_ms, last_polled_at, state, decided_at, subject, auth_time, session_id, used_at,
	family_id, access_token_id, access_token_expires_at, asked_entitlements, amr`

// PutDeviceCode stores a new, pending authorization.
func (s *Store) PutDeviceCode(ctx context.Context, d store.DeviceCode) error {
	if len(d.Hash) == 0 || len(d.UserCodeHash) == 0 {
		return errors.New("storing device code: empty hash")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO device_codes (`+deviceColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, NULL, '', NULL, '', NULL, '', '', NULL, $10, '{}')`,
		d.Hash, d.UserCodeHash, d.ClientID, textList(d.Scopes), ts(d.Created), ts(d.ExpiresAt),
		ts(d.RetainUntil), d.Interval.Milliseconds(), store.DevicePending, askedList(d.AskedEntitlements))
	if isUnique(err) {
		return fmt.Errorf("storing device code: %w", store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("storing device code: %w", err)
	}
	return nil
}

// scanDevice reads the deviceColumns of one row.
func scanDevice(row pgx.Row) (store.DeviceCode, error) {
	var (
		d                                     store.DeviceCode
		created, exp, retain, polled, decided pgtype.Timestamptz
		authTime, used, atExp                 pgtype.Timestamptz
		interval                              int64
		asked                                 *[]string
	)
	if err := row.Scan(&d.Hash, &d.UserCodeHash, &d.ClientID, &d.Scopes, &created, &exp, &retain, &interval,
		&polled, &d.State, &decided, &d.Subject, &authTime, &d.SessionID, &used,
		&d.FamilyID, &d.AccessTokenID, &atExp, &asked, &d.AMR); err != nil {
		return store.DeviceCode{}, err
	}
	if asked != nil {
		set, err := decodeSet(*asked)
		if err != nil {
			return store.DeviceCode{}, err
		}
		d.AskedEntitlements = &set
	}
	d.Scopes, d.AMR = nonEmpty(d.Scopes), nonEmpty(d.AMR)
	d.Created, d.ExpiresAt, d.RetainUntil = fromTS(created), fromTS(exp), fromTS(retain)
	d.Interval = time.Duration(interval) * time.Millisecond
	d.LastPolledAt, d.DecidedAt, d.AuthTime = fromTS(polled), fromTS(decided), fromTS(authTime)
	d.UsedAt, d.AccessTokenExpiresAt = fromTS(used), fromTS(atExp)
	return d, nil
}

// askedList binds the asked_entitlements of a device authorization: NULL
// when its request asked for no pairs, else a text[] ("{}" when it asked
// for none of them).
func askedList(s *entitle.Set) *[]string {
	if s == nil {
		return nil
	}
	l := textList(s.Strings())
	return &l
}

func (s *Store) deviceBy(ctx context.Context, column string, hash []byte) (store.DeviceCode, error) {
	d, err := scanDevice(s.pool.QueryRow(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE `+column+` = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
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

// PollDeviceCode records a poll: an UPDATE that only a poll after the
// interval passes, else one that slows the client down, in one
// transaction.
func (s *Store) PollDeviceCode(ctx context.Context, hash []byte, now time.Time) (store.DeviceCode, error) {
	var (
		d    store.DeviceCode
		slow bool
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		slow = false
		var err error
		d, err = scanDevice(tx.QueryRow(ctx, `UPDATE device_codes SET last_polled_at = $1
			WHERE hash = $2 AND (last_polled_at IS NULL OR
				last_polled_at + (interval_ms - LEAST(interval_ms / 5, 1000)) * interval '1 millisecond' <= $1)
			RETURNING `+deviceColumns, ms(now), hash))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		slow = true
		d, err = scanDevice(tx.QueryRow(ctx, `UPDATE device_codes SET last_polled_at = $1,
			interval_ms = LEAST(interval_ms + $2, $3) WHERE hash = $4 AND interval_ms < $3 RETURNING `+deviceColumns,
			ms(now), store.SlowDownStep.Milliseconds(), store.MaxPollInterval.Milliseconds(), hash))
		if errors.Is(err, pgx.ErrNoRows) {
			// At the most interval already, or not there: nothing to write.
			d, err = scanDevice(tx.QueryRow(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE hash = $1`, hash))
			if errors.Is(err, pgx.ErrNoRows) {
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
	state, scopes := store.DeviceDenied, []string(nil)
	if dd.Approved {
		state, scopes = store.DeviceApproved, textList(dd.Scopes)
	}
	d, err := scanDevice(s.pool.QueryRow(ctx, `UPDATE device_codes SET state = $1, decided_at = $2,
		subject = $3, auth_time = $4, session_id = $5, scopes = COALESCE($6, scopes), amr = $9
		WHERE user_code_hash = $7 AND state = $8 AND expires_at > $2 RETURNING `+deviceColumns,
		state, ms(now), dd.Subject, ts(dd.AuthTime), dd.SessionID, scopes, userCodeHash, store.DevicePending, textList(dd.AMR)))
	if errors.Is(err, pgx.ErrNoRows) {
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
	d, err := scanDevice(s.pool.QueryRow(ctx, `UPDATE device_codes SET used_at = $1, family_id = $2,
		access_token_id = $3, access_token_expires_at = $4
		WHERE hash = $5 AND state = $6 AND used_at IS NULL RETURNING `+deviceColumns,
		ms(now), issued.FamilyID, issued.AccessTokenID, ts(issued.AccessTokenExpiresAt), hash, store.DeviceApproved))
	if errors.Is(err, pgx.ErrNoRows) {
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM device_codes WHERE retain_until <= $1`, ms(now))
	if err != nil {
		return 0, fmt.Errorf("deleting expired device codes: %w", err)
	}
	return tag.RowsAffected(), nil
}

var _ store.DeviceStore = (*Store)(nil)
