package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"math/big"
)

// DeclaredKeys is a KeySource that knows, beyond each key's material,
// the one algorithm it signs with: the in-process key source of the
// identity server, and a remote key set whose JWKS entries carry "alg".
// The verifier then refuses a token whose "alg" is another, as RFC 8725
// §3.1 asks (a key is used with one algorithm only).
type DeclaredKeys interface {
	KeySource
	// DeclaredKey returns the published key kid and the "alg" it is
	// declared for ("" when it declares none), read together from one
	// state of the source: read apart, a key set replaced between the
	// two reads could pair a key with another key's alg. Its errors are
	// Key's.
	DeclaredKey(ctx context.Context, kid string) (crypto.PublicKey, string, error)
	// LowS reports whether the issuer makes ES256 signatures with s at
	// most half the curve's order only. The verifier then refuses the
	// twin (r, n−s) of such a signature, which ECDSA verification
	// accepts too, so a token has one spelling.
	LowS() bool
}

// DefaultAlgorithm is the "alg" a key that declares none is accepted
// with when Config.Algorithms is empty.
const DefaultAlgorithm = "RS256"

// keyFits reports whether key is of the type alg is bound to: an RSA key
// of at least 2048 bits for RS and PS, a key on the named curve for ES,
// Ed25519 for EdDSA. A token is refused when its "alg" does not fit the
// key its "kid" names, whatever the signature.
func keyFits(alg string, key crypto.PublicKey) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		k, ok := key.(*rsa.PublicKey)
		return ok && k.N.BitLen() >= minRSABits
	case "ES256", "ES384", "ES512":
		k, ok := key.(*ecdsa.PublicKey)
		return ok && k.Curve == curveOf(alg)
	case "EdDSA":
		_, ok := key.(ed25519.PublicKey)
		return ok
	}
	return false
}

// curveOf is the curve of an ES algorithm (RFC 7518 §3.4).
func curveOf(alg string) elliptic.Curve {
	switch alg {
	case "ES256":
		return elliptic.P256()
	case "ES384":
		return elliptic.P384()
	case "ES512":
		return elliptic.P521()
	}
	return nil
}

// errHighS is the cause of a refused high-S ECDSA signature.
var errHighS = errors.New("ECDSA signature with a high s: the issuer signs with low s only")

// highS reports whether sig, an ES signature r || s of alg, has s above
// half the curve's order.
func highS(alg string, sig []byte) bool {
	c := curveOf(alg)
	if c == nil || len(sig)%2 != 0 {
		return false
	}
	s := new(big.Int).SetBytes(sig[len(sig)/2:])
	return s.Cmp(new(big.Int).Rsh(c.Params().N, 1)) > 0
}

// key returns the key kid of the key source and the algorithm it declares
// for it, in one read (DeclaredKeys), or "" from a source that declares
// none.
func (v *Verifier) key(ctx context.Context, kid string) (crypto.PublicKey, string, error) {
	if d, ok := v.cfg.Keys.(DeclaredKeys); ok {
		return d.DeclaredKey(ctx, kid)
	}
	key, err := v.cfg.Keys.Key(ctx, kid)
	return key, "", err
}

// checkKeyAlgorithm checks that the token's alg fits key: its type, and
// declared, the algorithm the source declares for it ("" for none). With
// no algorithms configured, a declared key is accepted with its own
// algorithm only and an undeclared one with DefaultAlgorithm.
func (v *Verifier) checkKeyAlgorithm(alg string, key crypto.PublicKey, declared string) *Error {
	if !keyFits(alg, key) {
		return refuse(ReasonAlgorithm, fmt.Errorf("alg %q does not fit a %T", alg, key))
	}
	switch {
	case declared != "" && declared != alg:
		return refuse(ReasonAlgorithm, fmt.Errorf("alg %q on a key declared for %q", alg, declared))
	case declared == "" && !v.pinned && alg != DefaultAlgorithm:
		return refuse(ReasonAlgorithm, fmt.Errorf("alg %q on a key that declares none", alg))
	}
	return nil
}
