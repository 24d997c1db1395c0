package session

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gatehouse/gatehouse/identity/store"
)

// The browser state of OpenID Connect Session Management 1.0 §3: an opaque
// value that the check-session iframe's script reads from a cookie and
// that changes whenever the browser's login session does. Here it is
// derived from the session (a one-way hash of the session's stored hash,
// itself a hash of the cookie's secret), so it costs no storage, reveals
// nothing of the session cookie, and is the same on every instance. It is
// set with the session cookie at login and removed at logout: a browser
// without a session has no browser state, and any session_state computed
// against a session then reads "changed".
//
// SameSite: the check-session iframe runs in the relying party's page, so
// the browser-state cookie is a third-party cookie there. It is
// SameSite=None; Secure when the issuer is https or a loopback host
// (browsers treat http://localhost and 127.0.0.1 as secure contexts and
// keep Secure cookies from them); over plain http on any other host a
// browser refuses SameSite=None without Secure, so it is SameSite=Lax and
// check-session works only for relying parties on the identity server's
// own site. The cookie holds nothing secret: it is readable by script
// (not HttpOnly) by design. The session cookie itself stays HttpOnly and
// SameSite=Lax: no frame of ours needs it cross-site (front-channel logout
// frames are the relying parties' pages, and check-session reads only the
// browser state), and Lax keeps it out of cross-site posts.

// State is the browser state of session s: what the browser-state cookie
// holds while s is the browser's session.
func State(s store.Session) string {
	sum := sha256.Sum256(append([]byte("gatehouse browser state v1\x00"), s.Hash...))
	return base64.RawURLEncoding.EncodeToString(sum[:24])
}

// StateCookieName is the name of the browser-state cookie, which the
// check-session iframe's script reads.
func (m *Manager) StateCookieName() string { return m.state }

// StateOf is the browser state the request carries, or "".
func (m *Manager) StateOf(r *http.Request) string { return cookieValue(r, m.state) }

// stateCookie is the browser-state cookie holding value.
func (m *Manager) stateCookie(value string, maxAge int) *http.Cookie {
	c := &http.Cookie{Name: m.state, Value: value, Path: m.path, MaxAge: maxAge, Secure: m.secure, SameSite: http.SameSiteLaxMode}
	if m.stateSecure {
		c.Secure, c.SameSite = true, http.SameSiteNoneMode
	}
	return c
}

// loopbackHost reports whether host is localhost or a loopback address,
// which browsers treat as a secure context over http.
func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SessionState is the session_state of an authentication response (OpenID
// Connect Session Management 1.0 §3): hex(SHA-256(client_id, origin,
// browser state, salt, joined by spaces)), a dot, and the salt. The
// check-session iframe computes the same from the cookie it reads.
func SessionState(clientID, origin, browserState, salt string) string {
	sum := sha256.Sum256([]byte(clientID + " " + origin + " " + browserState + " " + salt))
	return hex.EncodeToString(sum[:]) + "." + salt
}

// NewSessionState is SessionState with a fresh random salt.
func NewSessionState(clientID, origin, browserState string) (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return SessionState(clientID, origin, browserState, hex.EncodeToString(b)), nil
}
