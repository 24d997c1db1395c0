package keys

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// signingKey is a loaded key with its algorithm and schedule.
type signingKey struct {
	id       string
	alg      string // RS256, ES256 or EdDSA, bound to the key's type
	private  crypto.Signer
	public   crypto.PublicKey // private.Public(), kept: the verifier compares it by identity
	created  time.Time
	signFrom time.Time
	retireAt time.Time // zero: not scheduled
	removeAt time.Time // zero: not scheduled
}

func (k *signingKey) signsAt(t time.Time) bool {
	return !t.Before(k.signFrom) && (k.retireAt.IsZero() || t.Before(k.retireAt))
}

func (k *signingKey) publishedAt(t time.Time) bool {
	return k.removeAt.IsZero() || t.Before(k.removeAt)
}

// keySet holds the signing keys loaded from the store.
type keySet struct {
	mu   sync.RWMutex
	keys []*signingKey // by signFrom, oldest first
}

func (ks *keySet) replace(keys []*signingKey) {
	ks.mu.Lock()
	ks.keys = keys
	ks.mu.Unlock()
}

func (ks *keySet) all() []*signingKey {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return append([]*signingKey(nil), ks.keys...)
}

// parseStoredKey opens a stored key. Its algorithm column must name the
// algorithm its key type signs with: a key is never used with another.
func parseStoredKey(sk store.SigningKey, kek []byte) (*signingKey, error) {
	if !Supported(sk.Algorithm) {
		return nil, fmt.Errorf("signing key %q: unsupported algorithm %q", sk.ID, sk.Algorithm)
	}
	der, err := openKey(kek, sk.Private, sk.ID)
	if err != nil {
		return nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parsing signing key %q: %w", sk.ID, err)
	}
	if alg := algorithmOf(parsed); alg != sk.Algorithm {
		return nil, fmt.Errorf("signing key %q is stored as %s but is a %T", sk.ID, sk.Algorithm, parsed)
	}
	priv := parsed.(crypto.Signer)
	if r, ok := priv.(*rsa.PrivateKey); ok {
		r.Precompute()
	}
	return &signingKey{id: sk.ID, alg: sk.Algorithm, private: priv, public: priv.Public(), created: sk.Created,
		signFrom: sk.SignFrom, retireAt: sk.RetireAt, removeAt: sk.RemoveAt}, nil
}

// newKey generates a key for alg (bits for RSA) with its schedule and
// stores it, sealed with kek when one is set.
func newKey(ctx context.Context, st store.Keys, kek []byte, alg string, bits int, now, signFrom, retireAt, removeAt time.Time) (*signingKey, error) {
	priv, err := generate(alg, bits)
	if err != nil {
		return nil, fmt.Errorf("generating %s signing key: %w", alg, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding signing key: %w", err)
	}
	pub := priv.Public()
	k := &signingKey{id: thumbprint(alg, pub), alg: alg, private: priv, public: pub, created: now,
		signFrom: signFrom, retireAt: retireAt, removeAt: removeAt}
	sealedKey, err := sealKey(kek, der, k.id)
	if err != nil {
		return nil, fmt.Errorf("encrypting signing key: %w", err)
	}
	err = st.AddSigningKey(ctx, store.SigningKey{ID: k.id, Algorithm: alg, Private: sealedKey,
		Created: now, SignFrom: signFrom, RetireAt: retireAt, RemoveAt: removeAt})
	if err != nil {
		return nil, fmt.Errorf("storing signing key %q: %w", k.id, err)
	}
	return k, nil
}

// signer returns the alg key that signs at t: of those whose period
// holds t, the one that began signing last.
func (ks *keySet) signer(alg string, t time.Time) (*signingKey, error) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	for i := len(ks.keys) - 1; i >= 0; i-- {
		if k := ks.keys[i]; k.alg == alg && k.signsAt(t) {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no %s signing key is active", alg)
}

// published returns the published key with this key id.
func (ks *keySet) published(kid string, t time.Time) (*signingKey, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	for _, k := range ks.keys {
		if k.id == kid && k.publishedAt(t) {
			return k, true
		}
	}
	return nil, false
}

// JWKS is a JWK Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the JSON key set of the keys published at t, each with its
// "alg".
func (m *Manager) JWKS(t time.Time) ([]byte, error) {
	ks := &m.keys
	ks.mu.RLock()
	set := JWKS{Keys: []JWK{}}
	for _, k := range ks.keys {
		if k.publishedAt(t) {
			set.Keys = append(set.Keys, publicJWK(k.id, k.alg, k.public))
		}
	}
	ks.mu.RUnlock()
	return json.Marshal(set)
}
