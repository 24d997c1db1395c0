package clients

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// SecretBytes is the entropy of a generated client secret: 256 bits.
const SecretBytes = 32

// NewSecret generates a client secret (base64url text of SecretBytes
// random bytes) and its SHA-256 digest as 64 hex digits, the form the
// configuration's secret_sha256 takes.
func NewSecret() (secret, digestHex string, err error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("reading randomness: %w", err)
	}
	secret = base64.RawURLEncoding.EncodeToString(b)
	return secret, DigestHex(secret), nil
}

// DigestHex is the SHA-256 digest of a secret as 64 hex digits.
func DigestHex(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ParseDigest decodes a SHA-256 digest written as 64 hex digits or as
// base64 (standard alphabet, padded or not). Its error does not quote s:
// what is not a digest may be the secret itself.
func ParseDigest(s string) ([]byte, error) {
	if len(s) == 2*sha256.Size {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("not a SHA-256 digest in 64 hex digits or base64: give the secret's digest, not the secret")
	}
	return b, nil
}
