package verify_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// FuzzVerify: any input is either a verified identity or a typed refusal,
// never a panic; only tokens the issuer signed verify.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	issuer := verifytest.NewIssuer(f, issuerURL, func() time.Time { return now })
	good := issuer.Token("alice", "Service/Market")
	f.Add(good)
	for _, c := range issuer.Hostile("Service/Market") {
		f.Add(c.Token)
	}
	f.Add("")
	f.Add("..")
	f.Add("e30.e30.")
	f.Add("eyJhbGciOiJSUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6InRlc3Qta2V5In0.e30.AAAA")
	v, err := verify.New(f.Context(), verify.Config{Issuer: issuerURL, Keys: issuer, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(t.Context(), token)
		if err != nil {
			var ve *verify.Error
			if !errors.As(err, &ve) || ve.Reason == "" || id != nil {
				t.Fatalf("untyped refusal %v (identity %v)", err, id)
			}
			return
		}
		if id.Subject == "" || id.Expiry.IsZero() {
			t.Fatalf("verified identity without subject or expiry: %+v", id)
		}
	})
}

// FuzzParseJWKS: a key set body never panics the parser.
func FuzzParseJWKS(f *testing.F) {
	issuer := verifytest.NewIssuer(f, issuerURL, time.Now)
	f.Add(string(issuer.JWKS()))
	f.Add(`{"keys":[{"kty":"EC","kid":"a","crv":"P-256","x":"AA","y":"AA"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","kid":"a","n":"","e":""}]}`)
	f.Add(`{"keys":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		keys, err := verify.ParseJWKS([]byte(body))
		if err == nil && keys == nil {
			t.Fatal("nil key map without error")
		}
	})
}
