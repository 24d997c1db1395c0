package keys

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// signingKey is a loaded key with its schedule.
type signingKey struct {
	id       string
	private  *rsa.PrivateKey
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

func parseStoredKey(sk store.SigningKey, kek []byte) (*signingKey, error) {
	if sk.Algorithm != "RS256" {
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
	priv, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %q is not an RSA key", sk.ID)
	}
	priv.Precompute()
	return &signingKey{id: sk.ID, private: priv, created: sk.Created, signFrom: sk.SignFrom, retireAt: sk.RetireAt, removeAt: sk.RemoveAt}, nil
}

// newKey generates an RSA key with its schedule and stores it.
func newKey(ctx context.Context, st store.Keys, kek []byte, bits int, now, signFrom, retireAt, removeAt time.Time) (*signingKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("generating signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding signing key: %w", err)
	}
	k := &signingKey{id: thumbprint(&priv.PublicKey), private: priv, created: now, signFrom: signFrom, retireAt: retireAt, removeAt: removeAt}
	sealedKey, err := sealKey(kek, der, k.id)
	if err != nil {
		return nil, fmt.Errorf("encrypting signing key: %w", err)
	}
	err = st.AddSigningKey(ctx, store.SigningKey{ID: k.id, Algorithm: "RS256", Private: sealedKey,
		Created: now, SignFrom: signFrom, RetireAt: retireAt, RemoveAt: removeAt})
	if err != nil {
		return nil, fmt.Errorf("storing signing key %q: %w", k.id, err)
	}
	return k, nil
}

// signer returns the key that signs at t: of those whose period holds t,
// the one that began signing last.
func (ks *keySet) signer(t time.Time) (*signingKey, error) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	for i := len(ks.keys) - 1; i >= 0; i-- {
		if ks.keys[i].signsAt(t) {
			return ks.keys[i], nil
		}
	}
	return nil, errors.New("no signing key is active")
}

// publicKey returns the published key with this key id.
func (ks *keySet) publicKey(kid string, t time.Time) (*rsa.PublicKey, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	for _, k := range ks.keys {
		if k.id == kid && k.publishedAt(t) {
			return &k.private.PublicKey, true
		}
	}
	return nil, false
}

// JWK is one public key of a JWK Set (RFC 7517).
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// JWKS is a JWK Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the JSON key set of the keys published at t.
func (m *Manager) JWKS(t time.Time) ([]byte, error) {
	ks := &m.keys
	ks.mu.RLock()
	set := JWKS{Keys: []JWK{}}
	for _, k := range ks.keys {
		if k.publishedAt(t) {
			set.Keys = append(set.Keys, rsaJWK(k.id, &k.private.PublicKey))
		}
	}
	ks.mu.RUnlock()
	return json.Marshal(set)
}

func rsaJWK(kid string, pub *rsa.PublicKey) JWK {
	b64 := base64.RawURLEncoding
	return JWK{
		Kty: "RSA", Use: "sig", Kid: kid, Alg: "RS256",
		N: b64.EncodeToString(pub.N.Bytes()),
		E: b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// thumbprint is the RFC 7638 JWK thumbprint of an RSA public key, used as
// its key id.
func thumbprint(pub *rsa.PublicKey) string {
	j := rsaJWK("", pub)
	// Members in lexicographic order, no white space (RFC 7638 §3.2).
	canonical := fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, j.E, j.N)
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
