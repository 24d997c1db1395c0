package keys

import (
	"context"
	"crypto"
	"crypto/rsa"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// source is the manager as the verifier's in-process key source, with no
// HTTP hop.
type source struct {
	m   *Manager
	now func() time.Time
}

// Source returns the manager's published keys as a verify.KeySource,
// judged at the time now returns.
func (m *Manager) Source(now func() time.Time) verify.KeySource {
	return source{m: m, now: now}
}

// Key returns the published public key kid.
func (s source) Key(_ context.Context, kid string) (crypto.PublicKey, error) {
	if k, ok := s.m.keys.publicKey(kid, s.now()); ok {
		return k, nil
	}
	return nil, verify.ErrUnknownKey
}

// Published reports whether key is still published as kid.
func (s source) Published(kid string, key crypto.PublicKey) bool {
	k, ok := s.m.keys.publicKey(kid, s.now())
	return ok && crypto.PublicKey(k) == key
}

// SigningKey returns the id and private key of the key that signs at t,
// for tests that forge tokens with the server's own key.
func (m *Manager) SigningKey(t time.Time) (string, *rsa.PrivateKey, error) {
	k, err := m.keys.signer(t)
	if err != nil {
		return "", nil, err
	}
	return k.id, k.private, nil
}
