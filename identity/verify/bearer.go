package verify

import (
	"errors"
	"net/http"
	"strings"
)

// RFC 6750 §3.1 error codes.
const (
	BearerInvalidRequest    = "invalid_request"
	BearerInvalidToken      = "invalid_token"
	BearerInsufficientScope = "insufficient_scope"
	// BearerInsufficientUserAuthentication: the token's authentication
	// is not the class (acr) the resource needs (RFC 9470 §3).
	BearerInsufficientUserAuthentication = "insufficient_user_authentication"
)

// Errors of BearerToken.
var (
	ErrNoToken       = errors.New("no bearer token")
	ErrBadAuthHeader = errors.New("malformed Authorization header")
)

// BearerToken returns the token of an "Authorization: Bearer" header
// (RFC 6750 §2.1). ErrNoToken when there is none, ErrBadAuthHeader when
// the header is repeated, of another scheme, or malformed. Tokens in the
// URL are never read.
func BearerToken(r *http.Request) (string, error) {
	h := r.Header.Values("Authorization")
	switch {
	case len(h) == 0:
		return "", ErrNoToken
	case len(h) > 1:
		return "", ErrBadAuthHeader
	}
	scheme, token, ok := strings.Cut(h[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrBadAuthHeader
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.IndexByte(token, ' ') >= 0 || strings.IndexByte(token, '	') >= 0 {
		return "", ErrBadAuthHeader
	}
	return token, nil
}

// Challenge formats a WWW-Authenticate value for the Bearer scheme (RFC
// 6750 §3). code may be empty (no credentials were sent); description and
// scope are optional. Values are stripped of quotes and backslashes.
func Challenge(realm, code, description, scope string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="`)
	b.WriteString(quoteSafe(realm))
	b.WriteByte('"')
	if code != "" {
		b.WriteString(`, error="`)
		b.WriteString(quoteSafe(code))
		b.WriteByte('"')
	}
	if description != "" {
		b.WriteString(`, error_description="`)
		b.WriteString(quoteSafe(description))
		b.WriteByte('"')
	}
	if scope != "" {
		b.WriteString(`, scope="`)
		b.WriteString(quoteSafe(scope))
		b.WriteByte('"')
	}
	return b.String()
}

// QuoteSafe reports whether s holds only characters RFC 6750 §3 allows in
// the quoted values of a challenge (%x20-21 / %x23-5B / %x5D-7E): printable
// ASCII but '"' and '\\'. Such a string goes into a quoted-string as it
// is.
func QuoteSafe(s string) bool {
	return !strings.ContainsFunc(s, unquotable)
}

func unquotable(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }

// quoteSafe drops the characters QuoteSafe refuses.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unquotable(r) {
			return -1
		}
		return r
	}, s)
}

// Description is a short text for a refusal, fit for error_description:
// it names the reason and nothing of the token.
func Description(err error) string {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return "the access token is invalid"
	}
	switch e.Reason {
	case ReasonExpired:
		return "the access token expired"
	case ReasonRevoked:
		return "the access token was revoked"
	case ReasonEntitlementsChanged:
		return "the entitlements of the access token changed: refresh it"
	case ReasonKeysUnavailable:
		return "the access token cannot be checked now"
	}
	return "the access token is invalid"
}
