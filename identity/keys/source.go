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
// judged at the time now returns. Each key declares its algorithm
// (verify.DeclaredKeys), and its ES256 signatures are low-S.
func (m *Manager) Source(now func() time.Time) verify.KeySource {
	return source{m: m, now: now}
}

// Key returns the published public key kid.
func (s source) Key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	k, _, err := s.DeclaredKey(ctx, kid)
	return k, err
}

// DeclaredKey implements verify.DeclaredKeys: the published public key
// kid and the algorithm it signs with, both of the one key read.
func (s source) DeclaredKey(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if k, ok := s.m.keys.published(kid, s.now()); ok {
		return k.public, k.alg, nil
	}
	return nil, "", verify.ErrUnknownKey
}

// Published reports whether key is still published as kid
// (verify.SameKey: an ed25519.PublicKey is a slice, which == panics on).
func (s source) Published(kid string, key crypto.PublicKey) bool {
	k, ok := s.m.keys.published(kid, s.now())
	return ok && verify.SameKey(k.public, key)
}

// LowS implements verify.DeclaredKeys: the manager signs ES256 with low S
// only (sign).
func (source) LowS() bool { return true }

var _ verify.DeclaredKeys = source{}

// SigningKey returns the id and private key of the RS256 key that signs
// at t, for tests that forge tokens with the server's own key.
func (m *Manager) SigningKey(t time.Time) (string, *rsa.PrivateKey, error) {
	k, err := m.keys.signer(RS256, t)
	if err != nil {
		return "", nil, err
	}
	return k.id, k.private.(*rsa.PrivateKey), nil
}

// SigningKeyFor returns the id and private key of the alg key that signs
// at t.
func (m *Manager) SigningKeyFor(alg string, t time.Time) (string, crypto.Signer, error) {
	k, err := m.keys.signer(alg, t)
	if err != nil {
		return "", nil, err
	}
	return k.id, k.private, nil
}
