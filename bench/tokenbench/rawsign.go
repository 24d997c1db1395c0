package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
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
