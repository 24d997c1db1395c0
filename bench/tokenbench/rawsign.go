package main

import (
	"context"
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
	"sync"
)

// rawKey is the key of the raw figures: 2048-bit RSA, precomputed, as
// identity's signing keys are.
var rawKey = sync.OnceValues(func() (*rsa.PrivateKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating the raw signing key: %w", err)
	}
	k.Precompute()
	return k, nil
})

// signingInput is an access token's header.payload as identity builds it
// (identity/jwt.go signJWT): the header with its kid and typ, and RFC 9068
// claims of a client_credentials token.
var signingInput = func() []byte {
	b64 := base64.RawURLEncoding
	header := `{"alg":"RS256","kid":"` + b64.EncodeToString(make([]byte, 32)) + `","typ":"at+jwt"}`
	payload := `{"iss":"http://127.0.0.1:43210","sub":"bench-service","aud":"gatehouse",` +
		`"exp":1767225600,"iat":1767222000,"nbf":1767222000,"jti":"` + b64.EncodeToString(make([]byte, 16)) +
		`","client_id":"bench-service","scope":"Service/Market"}`
	return []byte(b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload)))
}()

// rawSign is one RS256 signature per operation, as signJWT makes it:
// SHA-256 of the signing input, then rsa.SignPKCS1v15.
func rawSign(context.Context, int) (op, error) {
	k, err := rawKey()
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		digest := sha256.Sum256(signingInput)
		_, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, digest[:])
		return err
	}, nil
}

// rawVerify is one RS256 verification per operation, for reference (what a
// resource server pays per uncached token).
func rawVerify(context.Context, int) (op, error) {
	k, err := rawKey()
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(signingInput)
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, digest[:])
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		digest := sha256.Sum256(signingInput)
		if err := rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
			return fmt.Errorf("%w: %w", errStop, err)
		}
		return nil
	}, nil
}

// rawECKey and rawEdKey are the keys of the raw ES256 and EdDSA figures.
var (
	rawECKey = sync.OnceValues(func() (*ecdsa.PrivateKey, error) {
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	})
	rawEdKey = sync.OnceValues(func() (ed25519.PrivateKey, error) {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	})
)

// p256HalfOrder is n/2 for P-256, for the low-S step of rawSignES256.
var p256HalfOrder = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// rawSignES256 is one ES256 signature per operation, as identity's keys
// make it: SHA-256 of the signing input, ecdsa.Sign, s made low, r || s.
func rawSignES256(context.Context, int) (op, error) {
	k, err := rawECKey()
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		digest := sha256.Sum256(signingInput)
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return err
		}
		if s.Cmp(p256HalfOrder) > 0 {
			s.Sub(elliptic.P256().Params().N, s)
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return nil
	}, nil
}

// rawSignEdDSA is one Ed25519 signature of the signing input per operation.
func rawSignEdDSA(context.Context, int) (op, error) {
	k, err := rawEdKey()
	if err != nil {
		return nil, err
	}
	return func(context.Context) error {
		_ = ed25519.Sign(k, signingInput)
		return nil
	}, nil
}
