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

// The browser flows' roles (store.BrowserStore): sessions, codes, consents,
// as the SQLite backend keeps them.

const sessionColumns = `hash, id, subject, auth_time, created_at, last_seen, expires_at,
	absolute_expires_at, clients, amr`

// CreateSession stores a new session. ErrAlreadyExists if its hash or id
// is taken.
func (s *Store) CreateSession(ctx context.Context, ss store.Session) error {
	if len(ss.Hash) == 0 || ss.ID == "" {
		return errors.New("creating session: empty hash or id")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		ss.Hash, ss.ID, ss.Subject, ts(ss.AuthTime), ts(ss.Created), ts(ss.LastSeen),
		ts(ss.ExpiresAt), ts(ss.AbsoluteExpiresAt), textList(ss.Clients), textList(ss.AMR))
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
		authTime, created, seen, exp, absolute pgtype.Timestamptz
	)
	err := s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE hash = $1`, hash).
		Scan(&ss.Hash, &ss.ID, &ss.Subject, &authTime, &created, &seen, &exp, &absolute, &ss.Clients, &ss.AMR)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("reading session: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("reading session: %w", err)
	}
	ss.AuthTime, ss.Created, ss.LastSeen = fromTS(authTime), fromTS(created), fromTS(seen)
	ss.ExpiresAt, ss.AbsoluteExpiresAt = fromTS(exp), fromTS(absolute)
	ss.Clients, ss.AMR = nonEmpty(ss.Clients), nonEmpty(ss.AMR)
	return ss, nil
}

// SessionExists reports whether the session with this public ID is
// stored.
func (s *Store) SessionExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, id).Scan(&ok); err != nil {
		return false, fmt.Errorf("reading session: %w", err)
	}
	return ok, nil
}

// TouchSession records a use of the session, adding client to its
// clients in one statement (the row lock orders concurrent touches, so a
// client joins once).
func (s *Store) TouchSession(ctx context.Context, hash []byte, now, expiresAt time.Time, client string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen = $1, expires_at = $2,
		clients = CASE WHEN $3::text = '' OR $3::text = ANY (clients)
			THEN clients ELSE array_append(clients, $3::text) END
		WHERE hash = $4`, ts(now), ts(expiresAt), client, hash)
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
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
	tag, err := s.pool.Exec(ctx, `UPDATE sessions SET hash = $1, amr = $2, last_seen = $3 WHERE hash = $4`,
		newHash, textList(amr), ts(now), hash)
	if isUnique(err) {
		return fmt.Errorf("elevating session: %w", store.ErrAlreadyExists)
	}
	if err == nil {
		err = oneRow(tag)
	}
	if err != nil {
		return fmt.Errorf("elevating session: %w", err)
	}
	return nil
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE hash = $1`, hash); err != nil {
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
	_, err := s.pool.Exec(ctx, `INSERT INTO auth_codes (`+codeColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, NULL, '', '', NULL, $14, $15)`,
		c.Hash, c.ClientID, c.RedirectURI, c.Subject, textList(c.Scopes), c.Nonce, c.SessionID,
		ts(c.AuthTime), c.CodeChallenge, c.CodeChallengeMethod, ts(c.Created), ts(c.ExpiresAt),
		ts(c.RetainUntil), textList(c.Entitlements.Strings()), textList(c.AMR))
	if isUnique(err) {
		return fmt.Errorf("storing authorization code: %w", store.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("storing authorization code: %w", err)
	}
	return nil
}

// scanCode reads the codeColumns of one row.
func scanCode(row pgx.Row) (store.AuthCode, error) {
	var (
		c                                         store.AuthCode
		authTime, created, exp, retain, used, rep pgtype.Timestamptz
		atExp                                     pgtype.Timestamptz
		pairs                                     []string
	)
	if err := row.Scan(&c.Hash, &c.ClientID, &c.RedirectURI, &c.Subject, &c.Scopes, &c.Nonce, &c.SessionID,
		&authTime, &c.CodeChallenge, &c.CodeChallengeMethod, &created, &exp, &retain, &used, &rep,
		&c.FamilyID, &c.AccessTokenID, &atExp, &pairs, &c.AMR); err != nil {
		return store.AuthCode{}, err
	}
	var err error
	if c.Entitlements, err = decodeSet(pairs); err != nil {
		return store.AuthCode{}, err
	}
	c.Scopes, c.AMR = nonEmpty(c.Scopes), nonEmpty(c.AMR)
	c.AuthTime, c.Created, c.ExpiresAt, c.RetainUntil = fromTS(authTime), fromTS(created), fromTS(exp), fromTS(retain)
	c.UsedAt, c.ReplayedAt, c.AccessTokenExpiresAt = fromTS(used), fromTS(rep), fromTS(atExp)
	return c, nil
}

// Code returns the code with this hash.
func (s *Store) Code(ctx context.Context, hash []byte) (store.AuthCode, error) {
	c, err := scanCode(s.pool.QueryRow(ctx, `SELECT `+codeColumns+` FROM auth_codes WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AuthCode{}, fmt.Errorf("reading authorization code: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.AuthCode{}, fmt.Errorf("reading authorization code: %w", err)
	}
	return c, nil
}

// ConsumeCode uses a code. The compare-and-swap is one UPDATE that only an
// unused code passes: of concurrent callers, on any number of instances,
// the first to update the row holds its lock until it commits, and the
// others, under READ COMMITTED, then check their WHERE again on the row it
// committed and find it used. A caller that did not win marks the replay
// with a second UPDATE, which also tells a used code from a missing one.
func (s *Store) ConsumeCode(ctx context.Context, hash []byte, now time.Time, issued store.CodeIssue) (store.AuthCode, error) {
	var (
		c      store.AuthCode
		replay bool
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		replay = false
		var err error
		c, err = scanCode(tx.QueryRow(ctx, `UPDATE auth_codes SET used_at = $1, family_id = $2,
			access_token_id = $3, access_token_expires_at = $4
			WHERE hash = $5 AND used_at IS NULL RETURNING `+codeColumns,
			ts(now), issued.FamilyID, issued.AccessTokenID, ts(issued.AccessTokenExpiresAt), hash))
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// Not unused: used before, or none. The replay is recorded (it
		// must stay recorded, so this is no error to roll back).
		replay = true
		c, err = scanCode(tx.QueryRow(ctx, `UPDATE auth_codes SET replayed_at = COALESCE(replayed_at, $1)
			WHERE hash = $2 RETURNING `+codeColumns, ts(now), hash))
		if errors.Is(err, pgx.ErrNoRows) {
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
	_, err := s.pool.Exec(ctx, `INSERT INTO consents (subject, client_id, scopes, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (subject, client_id) DO UPDATE SET scopes = excluded.scopes,
			created_at = excluded.created_at, expires_at = excluded.expires_at`,
		c.Subject, c.ClientID, textList(c.Scopes), ts(c.Created), ts(c.ExpiresAt))
	if err != nil {
		return fmt.Errorf("storing consent: %w", err)
	}
	return nil
}

// Consent returns the consent of subject to clientID.
func (s *Store) Consent(ctx context.Context, subject, clientID string) (store.Consent, error) {
	var (
		c            = store.Consent{Subject: subject, ClientID: clientID}
		created, exp pgtype.Timestamptz
	)
	err := s.pool.QueryRow(ctx, `SELECT scopes, created_at, expires_at FROM consents
		WHERE subject = $1 AND client_id = $2`, subject, clientID).Scan(&c.Scopes, &created, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Consent{}, fmt.Errorf("reading consent: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Consent{}, fmt.Errorf("reading consent: %w", err)
	}
	c.Scopes = nonEmpty(c.Scopes)
	c.Created, c.ExpiresAt = fromTS(created), fromTS(exp)
	return c, nil
}

// DeleteConsent removes the consent of subject to clientID.
func (s *Store) DeleteConsent(ctx context.Context, subject, clientID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM consents WHERE subject = $1 AND client_id = $2`, subject, clientID); err != nil {
		return fmt.Errorf("deleting consent: %w", err)
	}
	return nil
}

// deleteExpiredBrowserQueries are DeleteExpiredBrowser's statements, each
// of which removes what has expired at $1 (a NULL expires_at of a consent
// never passes).
var deleteExpiredBrowserQueries = []string{
	`DELETE FROM sessions WHERE expires_at <= $1`,
	`DELETE FROM auth_codes WHERE retain_until <= $1`,
	`DELETE FROM consents WHERE expires_at <= $1`,
}

// DeleteExpiredBrowser removes, in one transaction, the sessions, codes and
// consents that have expired at now, and counts them.
func (s *Store) DeleteExpiredBrowser(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		total = 0
		for _, q := range deleteExpiredBrowserQueries {
			tag, err := tx.Exec(ctx, q, ms(now))
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("deleting expired browser records: %w", err)
	}
	return total, nil
}

var _ store.BrowserStore = (*Store)(nil)
