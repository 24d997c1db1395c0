package keys

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Sign signs claims with the key that signs at now, as a compact JWS with
// RS256 and the given "typ" header.
func (m *Manager) Sign(typ string, claims any, now time.Time) (string, error) {
	k, err := m.keys.signer(now)
	if err != nil {
		return "", err
	}
	return signJWT(k, typ, claims)
}

// signJWT signs claims with k as a compact JWS with RS256.
func signJWT(k *signingKey, typ string, claims any) (string, error) {
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{"RS256", k.id, typ})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	b64 := base64.RawURLEncoding
	var sb strings.Builder
	sb.Grow(b64.EncodedLen(len(header)) + b64.EncodedLen(len(payload)) + 2 + b64.EncodedLen(k.private.Size()))
	sb.WriteString(b64.EncodeToString(header))
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(payload))
	digest := sha256.Sum256([]byte(sb.String()))
	sig, err := rsa.SignPKCS1v15(nil, k.private, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(sig))
	return sb.String(), nil
}
