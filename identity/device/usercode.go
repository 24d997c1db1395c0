package device

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// UserCodeAlphabet is what user codes are made of: consonants without
// vowels (no words), without the easily confused (RFC 8628 §6.1).
const UserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// UserCodeLen is the number of characters of a user code: 20^8 ≈ 2^34.6.
const UserCodeLen = 8

// newUserCode draws a user code from crypto/rand, without modulo bias.
func newUserCode() (string, error) {
	const n = len(UserCodeAlphabet)
	const limit = 256 - 256%n // reject bytes that would bias the draw
	out := make([]byte, 0, UserCodeLen)
	buf := make([]byte, 16)
	for len(out) < UserCodeLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("reading randomness: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < UserCodeLen {
				out = append(out, UserCodeAlphabet[int(b)%n])
			}
		}
	}
	return string(out), nil
}

// FormatUserCode is how a user code is shown: XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != UserCodeLen {
		return code
	}
	return code[:UserCodeLen/2] + "-" + code[UserCodeLen/2:]
}

// NormalizeUserCode is what a user typed, as a user code: upper case,
// without dashes and spaces. ok is false when the result cannot be a user
// code (wrong length, a character outside the alphabet), so that it is
// refused without a lookup.
func NormalizeUserCode(typed string) (code string, ok bool) {
	if len(typed) > 64 {
		return "", false
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(typed) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case r < 128 && strings.IndexByte(UserCodeAlphabet, byte(r)) >= 0:
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	if b.Len() != UserCodeLen {
		return "", false
	}
	return b.String(), true
}

// hashUserCode is how the store finds a user code: HMAC-SHA256 under the
// user-code key.
func (e *Endpoint) hashUserCode(code string) []byte {
	m := hmac.New(sha256.New, e.cfg.UserCodeKey)
	m.Write([]byte("gatehouse user code v1\x00"))
	m.Write([]byte(code))
	return m.Sum(nil)
}

// newDeviceCode is a device code: 256 bits from crypto/rand, base64url.
func newDeviceCode() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
