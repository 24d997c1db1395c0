package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Defaults of Config.
const (
	// DefaultIdleTimeout is how long a session lasts unused.
	DefaultIdleTimeout = 10 * time.Hour
	// DefaultLifetime is how long a session lasts however often it is used.
	DefaultLifetime = 7 * 24 * time.Hour
	// secretBytes is the entropy of a session cookie's secret (256 bits).
	secretBytes = 32
	// maxCookieLen bounds a cookie value read back.
	maxCookieLen = 256
	// touchEvery bounds how often a session's expiry is moved on in the
	// store when it is used by the same client.
	touchEvery = time.Minute
)

// Config configures a Manager.
type Config struct {
	// Store keeps the sessions. Required.
	Store store.Sessions
	// Issuer is the identity server's URL: https makes the cookies Secure
	// (and __Host- prefixed when the issuer has no path); its path is the
	// cookies' path. Required.
	Issuer string
	// IdleTimeout is how long a session lasts unused. Default 10h.
	IdleTimeout time.Duration
	// Lifetime is how long a session lasts at most. Default 7 days.
	Lifetime time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Ended, if set, reports whether the subject's sessions were ended
	// after authTime (store RevokeSubject: a changed password, a disabled
	// user; Revocations.AccessTokenRevoked with the subject). The store
	// deletes them then; a session started by a login that was checking the
	// old password as it landed is refused by Current, and by Start.
	Ended func(ctx context.Context, subject string, authTime time.Time) (bool, error)
}

// ErrEnded is Start's error when the user's sessions were ended after the
// login's authTime: the password it checked has changed since, or the user
// was disabled.
var ErrEnded = errors.New("the user's sessions were ended after this login")

// Manager creates, finds and ends sessions and sets their cookies. It is
// safe for concurrent use.
type Manager struct {
	cfg    Config
	secure bool
	path   string
	name   string // the session cookie's name
	pre    string // the pre-login cookie's name
	state  string // the browser-state cookie's name
	// stateSecure: the browser-state cookie is SameSite=None; Secure, so
	// that the check-session iframe reads it in another site's page.
	stateSecure bool
}

// New checks cfg and returns the manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("session manager needs a store")
	}
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("session manager: issuer %q is not an absolute URL", cfg.Issuer)
	}
	if cfg.IdleTimeout < 0 || cfg.Lifetime < 0 {
		return nil, errors.New("session lifetimes must not be negative")
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Lifetime == 0 {
		cfg.Lifetime = DefaultLifetime
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Manager{cfg: cfg, secure: u.Scheme == "https", path: u.Path}
	if m.path == "" {
		m.path = "/"
	}
	// A __Host- cookie is Secure, host-only and for the whole host: no
	// sibling or parent domain can set or shadow it.
	prefix := "gatehouse."
	if m.secure && m.path == "/" {
		prefix = "__Host-gatehouse."
	}
	m.name, m.pre, m.state = prefix+"session", prefix+"browser", prefix+"session_state"
	m.stateSecure = m.secure || loopbackHost(u.Hostname())
	return m, nil
}

// Hash is how a cookie secret is stored: its SHA-256.
func Hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// cookieValue is the value of the cookie name, or "" when it is absent or
// not one of ours.
func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil || len(c.Value) > maxCookieLen || c.Value == "" || strings.ContainsFunc(c.Value, notB64) {
		return ""
	}
	return c.Value
}

func notB64(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_')
}

func (m *Manager) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: m.path, MaxAge: maxAge,
		Secure: m.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
}

// Current is the request's live session: ok is false when the request has
// no session cookie or its session is unknown, ended or expired.
func (m *Manager) Current(ctx context.Context, r *http.Request) (s store.Session, ok bool, err error) {
	secret := cookieValue(r, m.name)
	if secret == "" {
		return store.Session{}, false, nil
	}
	s, err = m.cfg.Store.Session(ctx, Hash(secret))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Session{}, false, nil
	case err != nil:
		return store.Session{}, false, err
	}
	now := m.cfg.Now()
	if !now.Before(s.ExpiresAt) || (!s.AbsoluteExpiresAt.IsZero() && !now.Before(s.AbsoluteExpiresAt)) {
		return store.Session{}, false, nil
	}
	if ended, err := m.ended(ctx, s); err != nil || ended {
		return store.Session{}, false, err
	}
	return s, true, nil
}

// ended reports whether s was ended by its user's revocation (Config.Ended).
func (m *Manager) ended(ctx context.Context, s store.Session) (bool, error) {
	if m.cfg.Ended == nil {
		return false, nil
	}
	ended, err := m.cfg.Ended(ctx, s.Subject, s.AuthTime)
	if err != nil {
		return false, fmt.Errorf("reading whether the session's user was revoked: %w", err)
	}
	return ended, nil
}

// Start logs subject in with a password: a new session (never the one
// the browser had: no fixation), its cookie set on w, and the browser's
// previous session, if any, ended.
func (m *Manager) Start(ctx context.Context, w http.ResponseWriter, r *http.Request, subject string, authTime time.Time) (store.Session, error) {
	return m.StartWith(ctx, w, r, subject, authTime, []string{"pwd"})
}

// StartWith is Start for a sign-in that passed amr (a passkey: hwk, and
// with user verification user and mfa).
func (m *Manager) StartWith(ctx context.Context, w http.ResponseWriter, r *http.Request, subject string, authTime time.Time,
	amr []string) (store.Session, error) {
	secret, err := newSecret()
	if err != nil {
		return store.Session{}, err
	}
	sid, err := newSecret()
	if err != nil {
		return store.Session{}, err
	}
	now := m.cfg.Now()
	s := store.Session{
		Hash: Hash(secret), ID: sid[:22], Subject: subject, AuthTime: authTime, Created: now, LastSeen: now,
		AbsoluteExpiresAt: now.Add(m.cfg.Lifetime), AMR: slices.Clone(amr),
	}
	s.ExpiresAt = earlier(now.Add(m.cfg.IdleTimeout), s.AbsoluteExpiresAt)
	if err := m.store(ctx, s); err != nil {
		return store.Session{}, err
	}
	if old := cookieValue(r, m.name); old != "" {
		if err := m.cfg.Store.DeleteSession(ctx, Hash(old)); err != nil {
			return store.Session{}, fmt.Errorf("ending the previous session: %w", err)
		}
	}
	http.SetCookie(w, m.cookie(m.name, secret, 0))
	http.SetCookie(w, m.stateCookie(State(s), 0))
	return s, nil
}

// store stores the new session s, then checks that its user's sessions
// were not ended after its AuthTime: a revocation committed before is
// seen here, one committed after deletes the session.
func (m *Manager) store(ctx context.Context, s store.Session) error {
	if err := m.cfg.Store.CreateSession(ctx, s); err != nil {
		return fmt.Errorf("starting session: %w", err)
	}
	if ended, err := m.ended(ctx, s); err != nil || ended {
		if derr := m.cfg.Store.DeleteSession(ctx, s.Hash); derr != nil && err == nil {
			err = derr
		}
		if err == nil {
			err = ErrEnded
		}
		return err
	}
	return nil
}

// Elevate records that the user of s passed another factor, amr being
// the methods passed now: s is replaced by a session with amr and
// otherwise s's public id, user, authentication time, clients and
// expiries, under a new cookie secret (a change of privilege takes a new
// cookie). The browser state changes with it, so relying parties that
// watch it check the session again. ErrEnded when s has ended meanwhile
// (a logout), or the user's sessions were ended after s's authentication.
func (m *Manager) Elevate(ctx context.Context, w http.ResponseWriter, s store.Session, amr []string) (store.Session, error) {
	secret, err := newSecret()
	if err != nil {
		return store.Session{}, err
	}
	n := s
	n.Hash, n.AMR, n.LastSeen = Hash(secret), amr, m.cfg.Now()
	// One statement: a session ended meanwhile (a logout) stays ended,
	// and what others wrote to it (its clients) is kept.
	if err := m.cfg.Store.ElevateSession(ctx, s.Hash, n.Hash, amr, n.LastSeen); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Session{}, ErrEnded
		}
		return store.Session{}, fmt.Errorf("elevating the session: %w", err)
	}
	if ended, err := m.ended(ctx, n); err != nil || ended {
		if derr := m.cfg.Store.DeleteSession(ctx, n.Hash); derr != nil && err == nil {
			err = derr
		}
		if err == nil {
			err = ErrEnded
		}
		return store.Session{}, err
	}
	http.SetCookie(w, m.cookie(m.name, secret, 0))
	http.SetCookie(w, m.stateCookie(State(n), 0))
	return n, nil
}

// Methods are the authentication methods s passed: its AMR, or the
// password for a session stored before sessions kept them.
func Methods(s store.Session) []string {
	if len(s.AMR) == 0 {
		return []string{"pwd"}
	}
	return s.AMR
}

// Touch records a use of s by client: its idle expiry moves on (never past
// its lifetime) and client joins its clients. A session used again by a
// client it has is written at most every minute.
func (m *Manager) Touch(ctx context.Context, s store.Session, client string) error {
	now := m.cfg.Now()
	known := false
	for _, c := range s.Clients {
		known = known || c == client
	}
	if known && now.Sub(s.LastSeen) < touchEvery {
		return nil
	}
	exp := now.Add(m.cfg.IdleTimeout)
	if !s.AbsoluteExpiresAt.IsZero() {
		exp = earlier(exp, s.AbsoluteExpiresAt)
	}
	return m.cfg.Store.TouchSession(ctx, s.Hash, now, exp, client)
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// End ends the request's session, if any, and clears its cookie.
func (m *Manager) End(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	if secret := cookieValue(r, m.name); secret != "" {
		if err := m.cfg.Store.DeleteSession(ctx, Hash(secret)); err != nil {
			return err
		}
	}
	http.SetCookie(w, m.cookie(m.name, "", -1))
	http.SetCookie(w, m.stateCookie("", -1))
	return nil
}

// Browser is the pre-login cookie's secret, which anti-forgery tokens are
// bound to before there is a session: the request's, or a new one set on
// w.
func (m *Manager) Browser(w http.ResponseWriter, r *http.Request) (string, error) {
	if v := cookieValue(r, m.pre); v != "" {
		return v, nil
	}
	v, err := newSecret()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, m.cookie(m.pre, v, 0))
	return v, nil
}

// BrowserOf is the request's pre-login cookie secret, or "" if it has none.
func (m *Manager) BrowserOf(r *http.Request) string { return cookieValue(r, m.pre) }
