package verify_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// FuzzVerify: any input is either a typed refusal or the identity of the
// one token the issuer signed for the fuzzer. The fuzzer cannot mint a
// signature, so an input that verifies as anyone else (the seeds hold the
// hostile table: altered claims, foreign keys, wrong issuer, expired, ...)
// means a check was skipped. The good token itself must verify, so a
// verifier refusing everything fails too.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	issuer := verifytest.NewIssuer(f, issuerURL, func() time.Time { return now })
	good := issuer.Token("alice", "Service/Market")
	want := issuer.Claims("alice", "Service/Market")
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
			if ve, ok := errors.AsType[*verify.Error](err); !ok || ve.Reason == "" || id != nil {
				t.Fatalf("untyped refusal %v (identity %v)", err, id)
			}
			if token == good {
				t.Fatalf("the issuer's own token refused: %v", err)
			}
			return
		}
		if id.JTI != want["jti"] || id.Subject != want["sub"] || id.ClientID != want["client_id"] ||
			!slices.Equal(id.Scopes, []string{"Service/Market"}) || id.Expiry.Unix() != want["exp"] {
			t.Fatalf("verified an identity the issuer never signed: sub %q client %q jti %q scopes %q exp %v",
				id.Subject, id.ClientID, id.JTI, id.Scopes, id.Expiry)
		}
	})
}

// jwk is one key of a JWK Set as the oracle of FuzzParseJWKS reads it.
type jwk struct {
	Kty, Use, Kid, Alg, N, E, Crv, X, Y string
}

// FuzzParseJWKS: every key the parser returns is a signature key the body
// holds under that kid, with exactly that body's key material (modulus and
// exponent, curve and point, or Ed25519's x), and no RSA modulus is under
// 2048 bits; no kid of an RSA signature key in a set it accepts is left
// out, unless its "alg" is not an RS or PS algorithm or another signature
// entry shares its kid (which then names no key); and the good seeds
// (RSA, EC, Ed25519, mixed with keys to skip) parse.
func FuzzParseJWKS(f *testing.F) {
	issuer := verifytest.NewIssuer(f, issuerURL, time.Now)
	f.Add(string(issuer.JWKS()))
	f.Add(`{"keys":[{"kty":"EC","kid":"a","crv":"P-256","x":"AA","y":"AA"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","kid":"a","n":"","e":""}]}`)
	f.Add(`{"keys":null}`)
	// An encryption key and a key without kid next to the signature key.
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal(issuer.JWKS(), &set); err != nil {
		f.Fatal(err)
	}
	sig := set.Keys[0]
	enc := map[string]any{"kty": "RSA", "use": "enc", "kid": "enc", "n": sig["n"], "e": sig["e"]}
	noKid := map[string]any{"kty": "RSA", "n": sig["n"], "e": sig["e"]}
	mixed, _ := json.Marshal(map[string]any{"keys": []any{enc, noKid, sig}})
	f.Add(string(mixed))
	// 256 bytes of modulus, but the first six bits zero: a short key.
	weak := maps.Clone(sig)
	weak["n"] = "A" + sig["n"].(string)[1:]
	weakSet, _ := json.Marshal(map[string]any{"keys": []any{weak}})
	f.Add(string(weakSet))
	// P-256's base point: a valid key, the same in every run.
	gx, _ := new(big.Int).SetString("6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296", 16)
	gy, _ := new(big.Int).SetString("4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5", 16)
	ec, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": "p256", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(gx.Bytes()), "y": base64.RawURLEncoding.EncodeToString(gy.Bytes())}}})
	f.Add(string(ec))
	okp := `{"keys":[{"kty":"OKP","kid":"ed","crv":"Ed25519","alg":"EdDSA","x":"` + zeros(32) + `"}]}`
	f.Add(okp)
	f.Add(`{"keys":[{"kty":"OKP","kid":"ed","crv":"Ed25519","alg":"ES256","x":"` + zeros(32) + `"}]}`)
	// Good sets, which must parse.
	goodSets := map[string]bool{string(issuer.JWKS()): true, string(mixed): true, string(ec): true, okp: true}

	f.Fuzz(func(t *testing.T, body string) {
		keys, err := verify.ParseJWKS([]byte(body))
		if err != nil {
			if goodSets[body] {
				t.Fatalf("good key set refused: %v", err)
			}
			return
		}
		var in struct{ Keys []jwk }
		if json.Unmarshal([]byte(body), &in) != nil {
			t.Fatalf("accepted a body that is no JWK Set: %v", keys)
		}
		for kid, key := range keys {
			if !slices.ContainsFunc(in.Keys, func(k jwk) bool { return k.Kid == kid && isSig(k) && sameKey(k, key) }) {
				t.Fatalf("key %q (%T) is no signature key of the body with that material", kid, key)
			}
			if rk, ok := key.(*rsa.PublicKey); ok && rk.N.BitLen() < 2048 {
				t.Fatalf("key %q: a %d-bit RSA modulus", kid, rk.N.BitLen())
			}
		}
		for i, k := range in.Keys {
			shared := false
			for j, o := range in.Keys {
				shared = shared || j != i && o.Kid == k.Kid && isSig(o)
			}
			if k.Kty == "RSA" && k.Kid != "" && isSig(k) && !shared && slices.Contains([]string{"", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}, k.Alg) {
				if keys[k.Kid] == nil {
					t.Fatalf("RSA signature key %q left out", k.Kid)
				}
			}
		}
	})
}

func isSig(k jwk) bool { return k.Use == "" || k.Use == "sig" }

// sameKey reports whether key is the key k describes.
func sameKey(k jwk, key crypto.PublicKey) bool {
	b64 := func(s string) *big.Int {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return big.NewInt(-1)
		}
		return new(big.Int).SetBytes(raw)
	}
	switch key := key.(type) {
	case *rsa.PublicKey:
		return k.Kty == "RSA" && key.N.Cmp(b64(k.N)) == 0 && big.NewInt(int64(key.E)).Cmp(b64(k.E)) == 0
	case *ecdsa.PublicKey:
		x, y, ok := ecPoint(key)
		return ok && k.Kty == "EC" && key.Curve.Params().Name == k.Crv && x.Cmp(b64(k.X)) == 0 && y.Cmp(b64(k.Y)) == 0
	case ed25519.PublicKey:
		raw, err := base64.RawURLEncoding.DecodeString(k.X)
		return err == nil && k.Kty == "OKP" && k.Crv == "Ed25519" && bytes.Equal(raw, key)
	}
	return false
}

// ecPoint returns the affine coordinates of key.
func ecPoint(key *ecdsa.PublicKey) (x, y *big.Int, ok bool) {
	raw, err := key.Bytes()
	if err != nil || len(raw) == 0 || raw[0] != 4 {
		return nil, nil, false
	}
	size := (len(raw) - 1) / 2
	return new(big.Int).SetBytes(raw[1 : 1+size]), new(big.Int).SetBytes(raw[1+size:]), true
}

// FuzzDecodeObject: the strict JSON object reader agrees with
// encoding/json on what it accepts: an object it reads is valid JSON whose
// members, read by encoding/json, are the same names with the same values
// (so no duplicate went unnoticed and no name was folded), and an object
// without duplicates that encoding/json reads exactly, it reads too.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":1,"a":2}`, `{"ISS":"x","iss":"y"}`, `{"\u017fub":"x"}`, `{"a":{"b":[1,2]}}`, `{"a":1} x`, `[1]`, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		members, err := verify.DecodeObjectForTest(raw)
		var std map[string]json.RawMessage
		stdErr := json.Unmarshal(raw, &std)
		if err != nil {
			return
		}
		if stdErr != nil {
			t.Fatalf("accepted what encoding/json refuses (%v): %q", stdErr, raw)
		}
		if len(members) != len(std) || len(members) != topLevelNames(raw) {
			t.Fatalf("%d members, encoding/json has %d, the text names %d: %q", len(members), len(std), topLevelNames(raw), raw)
		}
		for name, v := range members {
			sv, ok := std[name]
			if !ok {
				t.Fatalf("member %q unknown to encoding/json: %q", name, raw)
			}
			var a, b any
			if json.Unmarshal(v, &a) != nil || json.Unmarshal(sv, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("member %q differs from encoding/json's: %q", name, raw)
			}
		}
	})
}

// topLevelNames counts the member names of the JSON object raw (duplicates
// included), walking its tokens: the test's own count, apart from the
// decoder under test.
func topLevelNames(raw []byte) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, names, expectName := 0, 0, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return names
		}
		switch tok {
		case json.Delim('{'):
			depth++
			expectName = depth == 1
			continue
		case json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 1 {
			if _, isString := tok.(string); isString && expectName {
				names++
				expectName = false
				continue
			}
			expectName = true // the value is done; a name comes next
		}
	}
}
