package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// The browser flows' roles (store.BrowserStore): sessions, codes, consents.

const sessionColumns = `hash, id, subject, auth_time, created_at, last_seen, expires_at,
	absolute_expires_at, clients, amr`

// CreateSession stores a new session. ErrAlreadyExists if its hash or id
// is taken.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	if len(ss.Hash) == 0 || ss.ID == "" {
		return errors.New("creating session: empty hash or id")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ss.Hash, ss.ID, ss.Subject, millis(ss.AuthTime), millis(ss.Created), millis(ss.LastSeen),
		millis(ss.ExpiresAt), millis(ss.AbsoluteExpiresAt), encodeList(ss.Clients), encodeList(ss.AMR))
	if isUnique(err) {
		return fmt.Errorf("creating session: %w", store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("creating session: %w", err)
	}
	return nil
}

// Session returns the session whose cookie secret hashes to hash.
func (s *Store) Session(ctx context.Context, hash []byte) (store.Session, error) {
	var (
		ss                                     store.Session
		authTime, created, seen, exp, absolute sql.NullInt64
		clients, amr                           string
	)
	err := s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE hash = ?`, hash).
		Scan(&ss.Hash, &ss.ID, &ss.Subject, &authTime, &created, &seen, &exp, &absolute, &clients, &amr)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, fmt.Errorf("reading session: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("reading session: %w", err)
	}
	ss.AuthTime, ss.Created, ss.LastSeen = fromMillis(authTime), fromMillis(created), fromMillis(seen)
	ss.ExpiresAt, ss.AbsoluteExpiresAt = fromMillis(exp), fromMillis(absolute)
	if ss.Clients, err = decodeList(clients); err != nil {
		return store.Session{}, fmt.Errorf("reading session: %w", err)
	}
	if ss.AMR, err = decodeList(amr); err != nil {
		return store.Session{}, fmt.Errorf("reading session: %w", err)
	}
	return ss, nil
}

// SessionExists reports whether the session with this public ID is
// stored.
func (s *Store) SessionExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`, id).Scan(&ok); err != nil {
		return false, fmt.Errorf("reading session: %w", err)
	}
	return ok, nil
}

// TouchSession records a use of the session, adding client to its
// clients in one statement.
func (s *Store) TouchSession(ctx context.Context, hash []byte, now, expiresAt time.Time, client string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE sessions SET last_seen = ?1, expires_at = ?2,
		clients = CASE WHEN ?3 = '' OR EXISTS (SELECT 1 FROM json_each(clients) WHERE value = ?3)
			THEN clients ELSE json_insert(clients, '$[#]', ?3) END
		WHERE hash = ?4`, millis(now), millis(expiresAt), client, hash)
	if err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	if err := oneRow(res); err != nil {
		return fmt.Errorf("touching session: %w", err)
	}
	return nil
}

// ElevateSession moves a session to a new hash with new authentication
// methods, in one UPDATE.
func (s *Store) ElevateSession(ctx context.Context, hash, newHash []byte, amr []string, now time.Time) error {
	if len(newHash) == 0 {
		return errors.New("elevating session: empty hash")
	}
	res, err := s.w.ExecContext(ctx, `UPDATE sessions SET hash = ?, amr = ?, last_seen = ? WHERE hash = ?`,
		newHash, encodeList(amr), millis(now), hash)
	if isUnique(err) {
		return fmt.Errorf("elevating session: %w", store.ErrAlreadyExists)
	}
	if err == nil {
		err = oneRow(res)
	}
	if err != nil {
		return fmt.Errorf("elevating session: %w", err)
	}
	return nil
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}

const codeColumns = `hash, client_id, redirect_uri, subject, scopes, nonce, session_id, auth_time,
	code_challenge, code_challenge_method, created_at, expires_at, retain_until, used_at, replayed_at,
	family_id, access_token_id, access_token_expires_at, entitlements, amr`

// PutCode stores a new, unused code.
func (s *Store) PutCode(ctx context.Context, c store.AuthCode) error {
	if len(c.Hash) == 0 {
		return errors.New("storing authorization code: empty hash")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO auth_codes (`+codeColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, '', '', NULL, ?, ?)`,
		c.Hash, c.ClientID, c.RedirectURI, c.Subject, encodeList(c.Scopes), c.Nonce, c.SessionID,
		millis(c.AuthTime), c.CodeChallenge, c.CodeChallengeMethod, millis(c.Created), millis(c.ExpiresAt),
		millis(c.RetainUntil), encodeSet(c.Entitlements), encodeList(c.AMR))
	if isUnique(err) {
		return fmt.Errorf("storing authorization code: %w", store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("storing authorization code: %w", err)
	}
	return nil
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

func scanCode(row rowScanner) (store.AuthCode, error) {
	var (
		c                                         store.AuthCode
		authTime, created, exp, retain, used, rep sql.NullInt64
		atExp                                     sql.NullInt64
		scopes, pairs, amr                        string
	)
	if err := row.Scan(&c.Hash, &c.ClientID, &c.RedirectURI, &c.Subject, &scopes, &c.Nonce, &c.SessionID,
		&authTime, &c.CodeChallenge, &c.CodeChallengeMethod, &created, &exp, &retain, &used, &rep,
		&c.FamilyID, &c.AccessTokenID, &atExp, &pairs, &amr); err != nil {
		return store.AuthCode{}, err
	}
	c.AuthTime, c.Created, c.ExpiresAt, c.RetainUntil = fromMillis(authTime), fromMillis(created), fromMillis(exp), fromMillis(retain)
	c.UsedAt, c.ReplayedAt, c.AccessTokenExpiresAt = fromMillis(used), fromMillis(rep), fromMillis(atExp)
	var err error
	if c.Scopes, err = decodeList(scopes); err != nil {
		return c, err
	}
	if c.AMR, err = decodeList(amr); err != nil {
		return c, err
	}
	c.Entitlements, err = decodeSet(pairs)
	return c, err
}

// Code returns the code with this hash.
func (s *Store) Code(ctx context.Context, hash []byte) (store.AuthCode, error) {
	c, err := scanCode(s.r.QueryRowContext(ctx, `SELECT `+codeColumns+` FROM auth_codes WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.AuthCode{}, fmt.Errorf("reading authorization code: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.AuthCode{}, fmt.Errorf("reading authorization code: %w", err)
	}
	return c, nil
}

// ConsumeCode uses a code: one UPDATE that only an unused code passes
// (the compare-and-swap), else one that marks the replay, in one write.
func (s *Store) ConsumeCode(ctx context.Context, hash []byte, now time.Time, issued store.CodeIssue) (store.AuthCode, error) {
	var (
		c      store.AuthCode
		replay bool
	)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		c, err = scanCode(tx.QueryRowContext(ctx, `UPDATE auth_codes SET used_at = ?, family_id = ?,
			access_token_id = ?, access_token_expires_at = ?
			WHERE hash = ? AND used_at IS NULL RETURNING `+codeColumns,
			millis(now), issued.FamilyID, issued.AccessTokenID, millis(issued.AccessTokenExpiresAt), hash))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// Not unused: used before, or none. The replay is recorded (it
		// must stay recorded, so this is no error to roll back).
		replay = true
		c, err = scanCode(tx.QueryRowContext(ctx, `UPDATE auth_codes SET replayed_at = COALESCE(replayed_at, ?)
			WHERE hash = ? RETURNING `+codeColumns, millis(now), hash))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	switch {
	case err != nil:
		return store.AuthCode{}, fmt.Errorf("using authorization code: %w", err)
	case replay:
		return c, fmt.Errorf("using authorization code: %w", store.ErrCodeUsed)
	}
	return c, nil
}

// PutConsent stores c, replacing the consent of the same subject and client.
func (s *Store) PutConsent(ctx context.Context, c store.Consent) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO consents (subject, client_id, scopes, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (subject, client_id) DO UPDATE SET scopes = excluded.scopes,
			created_at = excluded.created_at, expires_at = excluded.expires_at`,
		c.Subject, c.ClientID, encodeList(c.Scopes), millis(c.Created), millis(c.ExpiresAt))
	if err != nil {
		return fmt.Errorf("storing consent: %w", err)
	}
	return nil
}

// Consent returns the consent of subject to clientID.
func (s *Store) Consent(ctx context.Context, subject, clientID string) (store.Consent, error) {
	var (
		c            = store.Consent{Subject: subject, ClientID: clientID}
		created, exp sql.NullInt64
		scopes       string
	)
	err := s.r.QueryRowContext(ctx, `SELECT scopes, created_at, expires_at FROM consents
		WHERE subject = ? AND client_id = ?`, subject, clientID).Scan(&scopes, &created, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Consent{}, fmt.Errorf("reading consent: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Consent{}, fmt.Errorf("reading consent: %w", err)
	}
	c.Created, c.ExpiresAt = fromMillis(created), fromMillis(exp)
	if c.Scopes, err = decodeList(scopes); err != nil {
		return store.Consent{}, fmt.Errorf("reading consent: %w", err)
	}
	return c, nil
}

// DeleteConsent removes the consent of subject to clientID.
func (s *Store) DeleteConsent(ctx context.Context, subject, clientID string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM consents WHERE subject = ? AND client_id = ?`, subject, clientID); err != nil {
		return fmt.Errorf("deleting consent: %w", err)
	}
	return nil
}

// DeleteExpiredBrowser removes, in one transaction, the sessions, codes and
// consents that have expired at now, and counts them.
func (s *Store) DeleteExpiredBrowser(ctx context.Context, now time.Time) (int64, error) {
	n := millis(now)
	var total int64
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM sessions WHERE expires_at <= ?`,
			`DELETE FROM auth_codes WHERE retain_until <= ?`,
			`DELETE FROM consents WHERE expires_at IS NOT NULL AND expires_at <= ?`,
		} {
			res, err := tx.ExecContext(ctx, q, n)
			if err != nil {
				return err
			}
			c, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += c
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("deleting expired browser records: %w", err)
	}
	return total, nil
}

var _ store.BrowserStore = (*Store)(nil)
