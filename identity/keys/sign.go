package keys

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Sign signs claims with the alg key that signs at now, as a compact JWS
// with that "alg" and the given "typ" header. alg "" is the policy's
// default (DefaultAlgorithm).
func (m *Manager) Sign(alg, typ string, claims any, now time.Time) (string, error) {
	if alg == "" {
		alg = m.pol.Algorithms[0]
	}
	k, err := m.keys.signer(alg, now)
	if err != nil {
		return "", err
	}
	return signJWT(k, typ, claims)
}

// signJWT signs claims with k as a compact JWS with k's algorithm.
func signJWT(k *signingKey, typ string, claims any) (string, error) {
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{k.alg, k.id, typ})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	b64 := base64.RawURLEncoding
	var sb strings.Builder
	sb.Grow(b64.EncodedLen(len(header)) + b64.EncodedLen(len(payload)) + 2 + b64.EncodedLen(signatureSize(k.alg, k.private)))
	sb.WriteString(b64.EncodeToString(header))
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(payload))
	sig, err := sign(k.alg, k.private, []byte(sb.String()))
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(sig))
	return sb.String(), nil
}
