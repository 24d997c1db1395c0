package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Guard makes and checks anti-forgery tokens, and refuses forms posted
// from another site. It is safe for concurrent use.
//
// A token is HMAC-SHA256(key, purpose, binding): binding is a secret of
// the browser's own (its pre-login cookie, or its session), so a token
// from another browser, another session or another form is worth nothing,
// and no token is stored.
type Guard struct {
	key    []byte
	origin string
}

// NewGuard returns a guard with key (at least 32 bytes of a server
// secret, shared by every instance) for the identity server issuer.
func NewGuard(key []byte, issuer string) (*Guard, error) {
	if len(key) < 32 {
		return nil, errors.New("anti-forgery key shorter than 32 bytes")
	}
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("anti-forgery guard: issuer %q is not an absolute URL", issuer)
	}
	return &Guard{key: key, origin: u.Scheme + "://" + u.Host}, nil
}

// Token is the anti-forgery token of purpose (e.g. "login") bound to
// binding.
func (g *Guard) Token(purpose, binding string) string {
	m := hmac.New(sha256.New, g.key)
	m.Write([]byte("gatehouse csrf v1\x00"))
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(binding))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Check reports, in constant time, whether token is the token of purpose
// bound to binding. An empty binding or token never passes.
func (g *Guard) Check(token, purpose, binding string) bool {
	if token == "" || binding == "" {
		return false
	}
	return hmac.Equal([]byte(token), []byte(g.Token(purpose, binding)))
}

// Binding is what a session's anti-forgery tokens are bound to: its hashed
// cookie secret.
func Binding(s store.Session) string { return hex.EncodeToString(s.Hash) }

// ErrCrossSite is the refusal of a request sent from another site.
var ErrCrossSite = errors.New("request sent from another site")

// SameOrigin refuses a state-changing request that a browser says came from
// another origin: Sec-Fetch-Site other than same-origin, or an Origin
// other than the issuer's (an opaque "null" origin included). A request
// with neither header (an old browser, a script) passes: its
// anti-forgery token still has to.
func (g *Guard) SameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("%w: Sec-Fetch-Site %q", ErrCrossSite, truncate(site))
	}
	if origin, ok := r.Header["Origin"]; ok && (len(origin) != 1 || origin[0] != g.origin) {
		return fmt.Errorf("%w: Origin %q", ErrCrossSite, truncate(r.Header.Get("Origin")))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
