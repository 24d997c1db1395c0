package clients

import (
	"crypto"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// Loopback redirect URIs (RFC 8252 §7.3): a native app listens on a port
// the system gives it, so for the IP literals 127.0.0.1 and [::1] the port
// of a registered URI is ignored. Never for "localhost", a name that may
// resolve elsewhere (RFC 8252 §8.3).
var loopbackPrefixes = []string{"http://127.0.0.1", "http://[::1]"}

// MatchRedirectURI reports whether the redirect_uri requested is one of
// the client's registered URIs: the same string, exactly (no prefix,
// suffix, case or encoding variant); for a loopback IP literal, the same
// string once the port of each is left out.
func (c *Client) MatchRedirectURI(requested string) bool {
	for _, r := range c.RedirectURIs {
		if r == requested {
			return true
		}
	}
	base, rest, ok := splitLoopback(requested)
	if !ok {
		return false
	}
	for _, r := range c.RedirectURIs {
		if rb, rr, ok := splitLoopback(r); ok && rb == base && rr == rest {
			return true
		}
	}
	return false
}

// splitLoopback splits a loopback http URI into its scheme and host, and
// what follows the port (a path, then maybe a query), leaving the port
// out. ok is false for anything else, user info and fragments included.
func splitLoopback(s string) (base, rest string, ok bool) {
	for _, p := range loopbackPrefixes {
		after, found := strings.CutPrefix(s, p)
		if !found {
			continue
		}
		if strings.HasPrefix(after, ":") {
			i := strings.IndexByte(after, '/')
			if i < 0 || !validPort(after[:i]) {
				return "", "", false
			}
			after = after[i:]
		}
		if !strings.HasPrefix(after, "/") || strings.ContainsAny(after, "#@\\") {
			return "", "", false
		}
		return p, after, true
	}
	return "", "", false
}

// validPort reports whether s is ":" and a port number, 1 to 65535.
func validPort(s string) bool {
	digits, ok := strings.CutPrefix(s, ":")
	if !ok || digits == "" || len(digits) > 5 || digits[0] == '0' {
		return false
	}
	n := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return false
		}
		n = n*10 + int(d-'0')
	}
	return n <= 65535
}

// checkRedirectURI accepts a registered redirect URI (RFC 6749 §3.1.2): an
// absolute URI without fragment or user info, of a scheme a browser may
// be sent to (http, https, or an app's private scheme), and a host for
// http and https.
func checkRedirectURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || strings.Contains(s, "#") || u.User != nil {
		return fmt.Errorf("%q is not an absolute URI without fragment or user info", s)
	}
	switch strings.ToLower(u.Scheme) {
	case "javascript", "data", "vbscript", "file", "blob":
		return fmt.Errorf("%q: scheme %q cannot be redirected to", s, u.Scheme)
	case "http", "https":
		if u.Host == "" || u.Opaque != "" {
			return fmt.Errorf("%q has no host", s)
		}
	}
	return nil
}

// plainHTTPElsewhere reports whether s, a redirect URI checkRedirectURI
// accepts, is http to a host other than loopback (localhost, 127.0.0.0/8,
// ::1).
func plainHTTPElsewhere(s string) bool {
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// requestKeys parses a client's request-object key set: the keys
// verify.ParseJWKS keeps (RSA, EC on P-256, P-384 or P-521, and Ed25519,
// each with a kid and fit for signatures). None for an empty set.
func requestKeys(jwks []byte) (map[string]crypto.PublicKey, error) {
	if len(jwks) == 0 {
		return nil, nil
	}
	keys, err := verify.ParseJWKS(jwks)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("the key set holds no RSA, EC (P-256, P-384, P-521) or Ed25519 signature key with a kid")
	}
	return keys, nil
}

// MatchPostLogoutRedirectURI reports whether uri is one of the client's
// registered post-logout redirect URIs: the same string, exactly (OpenID
// Connect RP-Initiated Logout 1.0 §3: simple string comparison).
func (c *Client) MatchPostLogoutRedirectURI(uri string) bool {
	return uri != "" && slices.Contains(c.PostLogoutRedirectURIs, uri)
}
