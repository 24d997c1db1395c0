package tokens

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// PKCE code challenge methods (RFC 7636 §4.3).
const (
	PKCEPlain = "plain"
	PKCES256  = "S256"
)

// pkceText reports whether s is a code_verifier, or a plain challenge: 43
// to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~" (RFC
// 7636 §4.1).
func pkceText(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// ValidChallenge reports whether challenge is a well-formed code_challenge
// for method: for S256 the base64url of a SHA-256 digest (43 characters,
// no padding), for plain a verifier's text.
func ValidChallenge(challenge, method string) bool {
	switch method {
	case PKCES256:
		b, err := base64.RawURLEncoding.DecodeString(challenge)
		return err == nil && len(b) == sha256.Size && len(challenge) == 43
	case PKCEPlain:
		return pkceText(challenge)
	}
	return false
}

// S256Challenge is the S256 code_challenge of verifier.
func S256Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// verifyPKCE checks a code_verifier against the challenge of the
// authorization request (RFC 7636 §4.6), in constant time.
func verifyPKCE(challenge, method, verifier string) bool {
	if !pkceText(verifier) {
		return false
	}
	var derived string
	switch method {
	case PKCES256:
		derived = S256Challenge(verifier)
	case PKCEPlain:
		derived = verifier
	default:
		return false
	}
	return subtle.ConstantTimeCompare([]byte(derived), []byte(challenge)) == 1
}
