package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"slices"
)

// The signing algorithms (RFC 7518 §3, RFC 8037 §3.1), each bound to one
// key type: RS256 to RSA, ES256 to ECDSA on P-256, EdDSA to Ed25519.
const (
	RS256 = "RS256"
	ES256 = "ES256"
	EdDSA = "EdDSA"
)

// DefaultAlgorithm is the algorithm of a Policy that names none.
const DefaultAlgorithm = RS256

// Algorithms are the signing algorithms a Policy may name, in the order
// the JWKS lists their keys.
var Algorithms = []string{RS256, ES256, EdDSA}

// Supported reports whether alg is one of Algorithms.
func Supported(alg string) bool { return slices.Contains(Algorithms, alg) }

// generate makes a new private key for alg (bits for RSA).
func generate(alg string, bits int) (crypto.Signer, error) {
	switch alg {
	case RS256:
		return rsa.GenerateKey(rand.Reader, bits)
	case ES256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case EdDSA:
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	}
	return nil, fmt.Errorf("unsupported signing algorithm %q", alg)
}

// algorithmOf is the algorithm a private key signs with, from its type;
// "" for a key of no supported type (an ECDSA key on another curve).
func algorithmOf(key any) string {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return RS256
	case *ecdsa.PrivateKey:
		if k.Curve == elliptic.P256() {
			return ES256
		}
	case ed25519.PrivateKey:
		return EdDSA
	}
	return ""
}

// p256HalfOrder is n/2 for P-256: a signature's s above it is high.
var p256HalfOrder = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// sign returns the JWS signature of input with key under alg: RSASSA-PKCS1
// v1.5 over SHA-256 for RS256 (RFC 7518 §3.3); for ES256 the raw r || s, 32 bytes each
// (RFC 7518 §3.4, not ASN.1), with s at most n/2 (low S) so that each
// token has one signature, not also its twin (r, n−s); Ed25519 over the
// input itself for EdDSA.
func sign(alg string, key crypto.Signer, input []byte) ([]byte, error) {
	switch alg {
	case RS256:
		digest := sha256.Sum256(input)
		return rsa.SignPKCS1v15(nil, key.(*rsa.PrivateKey), crypto.SHA256, digest[:])
	case ES256:
		digest := sha256.Sum256(input)
		r, s, err := ecdsa.Sign(rand.Reader, key.(*ecdsa.PrivateKey), digest[:])
		if err != nil {
			return nil, err
		}
		if s.Cmp(p256HalfOrder) > 0 {
			s.Sub(elliptic.P256().Params().N, s)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig, nil
	case EdDSA:
		return ed25519.Sign(key.(ed25519.PrivateKey), input), nil
	}
	return nil, fmt.Errorf("unsupported signing algorithm %q", alg)
}

// signatureSize is the length of alg's signatures with key, in bytes.
func signatureSize(alg string, key crypto.Signer) int {
	if alg == RS256 {
		return key.(*rsa.PrivateKey).Size()
	}
	return 64 // ES256 r || s; Ed25519
}

// JWK is one public key of a JWK Set (RFC 7517; RFC 7518 §6 for RSA and
// EC members, RFC 8037 §2 for OKP).
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// publicJWK is the JWK of pub, the public key of an alg key.
func publicJWK(kid, alg string, pub crypto.PublicKey) JWK {
	b64 := base64.RawURLEncoding
	j := JWK{Use: "sig", Kid: kid, Alg: alg}
	switch p := pub.(type) {
	case *rsa.PublicKey:
		j.Kty, j.N, j.E = "RSA", b64.EncodeToString(p.N.Bytes()), b64.EncodeToString(big.NewInt(int64(p.E)).Bytes())
	case *ecdsa.PublicKey:
		// The uncompressed point: 0x04 || x || y, 32 bytes each on P-256.
		if raw, err := p.Bytes(); err == nil && len(raw) == 65 {
			j.Kty, j.Crv, j.X, j.Y = "EC", "P-256", b64.EncodeToString(raw[1:33]), b64.EncodeToString(raw[33:])
		}
	case ed25519.PublicKey:
		j.Kty, j.Crv, j.X = "OKP", "Ed25519", b64.EncodeToString(p)
	}
	return j
}

// thumbprint is the RFC 7638 JWK thumbprint of a public key, used as its
// key id: the required members in lexicographic order, no white space
// (§3.2; RFC 8037 §2 for OKP).
func thumbprint(alg string, pub crypto.PublicKey) string {
	j := publicJWK("", alg, pub)
	var canonical string
	switch j.Kty {
	case "RSA":
		canonical = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, j.E, j.N)
	case "EC":
		canonical = fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":%q,"y":%q}`, j.X, j.Y)
	default:
		canonical = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, j.X)
	}
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
