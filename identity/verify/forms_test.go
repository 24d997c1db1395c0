package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// Token forms the shared hostile table (verifytest.Hostile) and
// TestMalformedTokens leave out, each refused with its own reason; and the
// forms RFC 7519 / RFC 9068 allow, accepted, so the table is not refused
// for a reason of its own making.
func TestTokenForms(t *testing.T) {
	f := newFixture(t)
	is := f.issuer
	b64 := base64.RawURLEncoding
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	with := func(mod func(h, c map[string]any)) string {
		h, c := is.Header(), is.Claims("attacker", "Service/Admin")
		mod(h, c)
		return verifytest.Sign(h, c, is.Private)
	}
	// raw signs a header and claims given as JSON text with the issuer's key.
	raw := func(header, claims string) string { return verifytest.SignRaw(header, claims, is.Private) }
	goodHeader, goodClaims := enc(is.Header()), enc(is.Claims("attacker", "Service/Admin"))
	// claimsWith appends members to the good claims.
	claimsWith := func(members string) string { return strings.TrimSuffix(goodClaims, "}") + "," + members + "}" }
	headerWith := func(members string) string { return strings.TrimSuffix(goodHeader, "}") + "," + members + "}" }
	unsigned := func(alg string) string {
		h, c := is.Header(), is.Claims("attacker", "Service/Admin")
		h["alg"] = alg
		return b64.EncodeToString([]byte(enc(h))) + "." + b64.EncodeToString([]byte(enc(c))) + "."
	}
	hmacWith := func(key []byte) string {
		h, c := is.Header(), is.Claims("attacker", "Service/Admin")
		h["alg"] = "HS256"
		input := b64.EncodeToString([]byte(enc(h))) + "." + b64.EncodeToString([]byte(enc(c)))
		sig, err := jwt.SigningMethodHS256.Sign(input, key)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + b64.EncodeToString(sig)
	}
	jwkJSON := string(is.JWKS())
	jwkJSON = jwkJSON[strings.Index(jwkJSON, "[")+1 : strings.LastIndex(jwkJSON, "]")]
	good := is.Token("attacker", "Service/Admin")
	parts := strings.Split(good, ".")
	now := f.now

	refused := []struct {
		name  string
		token string
		want  verify.Reason
	}{
		// alg
		{"alg None", unsigned("None"), verify.ReasonAlgorithm},
		{"alg NONE", unsigned("NONE"), verify.ReasonAlgorithm},
		{"alg nOnE", unsigned("nOnE"), verify.ReasonAlgorithm},
		{"alg none with a real signature", with(func(h, _ map[string]any) { h["alg"] = "none" }), verify.ReasonAlgorithm},
		{"alg rs256", with(func(h, _ map[string]any) { h["alg"] = "rs256" }), verify.ReasonAlgorithm},
		{"alg RS256 with a space", with(func(h, _ map[string]any) { h["alg"] = "RS256 " }), verify.ReasonAlgorithm},
		{"alg missing", with(func(h, _ map[string]any) { delete(h, "alg") }), verify.ReasonAlgorithm},
		{"alg as an array", with(func(h, _ map[string]any) { h["alg"] = []string{"RS256"} }), verify.ReasonMalformed},
		{"HS256 keyed with the JWK", hmacWith([]byte(jwkJSON)), verify.ReasonAlgorithm},
		{"HS256 keyed with the modulus", hmacWith(is.Private.N.Bytes()), verify.ReasonAlgorithm},
		// structure
		{"JWE five parts", b64.EncodeToString([]byte(`{"alg":"RSA-OAEP","enc":"A256GCM","kid":"test-key","typ":"at+jwt"}`)) + ".AAAA.AAAA." + parts[1] + ".AAAA", verify.ReasonMalformed},
		{"leading dot", "." + good, verify.ReasonMalformed},
		{"empty header", "." + parts[1] + "." + parts[2], verify.ReasonMalformed},
		{"leading space", " " + good, verify.ReasonMalformed},
		{"trailing newline", good + "\n", verify.ReasonMalformed},
		{"padded header", parts[0] + strings.Repeat("=", (4-len(parts[0])%4)%4+4) + "." + parts[1] + "." + parts[2], verify.ReasonMalformed},
		{"payload in the standard base64 alphabet", func() string {
			// "???>>>" encodes as "Pz8/Pj4+": signed over the spelling
			// with '/' and '+', which base64url has not.
			input := parts[0] + "." + strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(claimsWith(`"x":"???>>>"`))), "=")
			if !strings.ContainsAny(input, "+/") {
				t.Fatal("no + or / in the payload")
			}
			sig, _ := jwt.SigningMethodRS256.Sign(input, is.Private)
			return input + "." + b64.EncodeToString(sig)
		}(), verify.ReasonMalformed},
		{"a second signature appended", good + "." + parts[2], verify.ReasonMalformed},
		{"JWS JSON serialization", `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`, verify.ReasonMalformed},
		// header members
		{"alg given twice, once escaped", raw(headerWith(`"\u0061lg":"none"`), goodClaims), verify.ReasonMalformed},
		{"kid given twice", raw(headerWith(`"kid":"other"`), goodClaims), verify.ReasonMalformed},
		{"empty crit", with(func(h, _ map[string]any) { h["crit"] = []string{} }), verify.ReasonMalformed},
		{"b64 false under crit", with(func(h, _ map[string]any) { h["b64"] = false; h["crit"] = []string{"b64"} }), verify.ReasonMalformed},
		{"b64 false with an unencoded payload", func() string {
			h := headerWith(`"b64":false`)
			input := b64.EncodeToString([]byte(h)) + "." + goodClaims
			sig, _ := jwt.SigningMethodRS256.Sign(input, is.Private)
			return input + "." + b64.EncodeToString(sig)
		}(), verify.ReasonMalformed},
		{"typ missing", with(func(h, _ map[string]any) { delete(h, "typ") }), verify.ReasonType},
		{"typ with a trailing space", with(func(h, _ map[string]any) { h["typ"] = "at+jwt " }), verify.ReasonType},
		{"typ with a NUL", with(func(h, _ map[string]any) { h["typ"] = "at+jwt\x00" }), verify.ReasonType},
		{"typ with two prefixes", with(func(h, _ map[string]any) { h["typ"] = "application/application/at+jwt" }), verify.ReasonType},
		{"typ of a logout token", with(func(h, _ map[string]any) { h["typ"] = "logout+jwt" }), verify.ReasonType},
		{"typ as an array", with(func(h, _ map[string]any) { h["typ"] = []string{"at+jwt"} }), verify.ReasonMalformed},
		{"kid with a path", with(func(h, _ map[string]any) { h["kid"] = "../../../../etc/passwd" }), verify.ReasonUnknownKey},
		{"kid with SQL", with(func(h, _ map[string]any) { h["kid"] = "test-key' OR '1'='1" }), verify.ReasonUnknownKey},
		{"kid with a NUL", with(func(h, _ map[string]any) { h["kid"] = "test-key\x00" }), verify.ReasonUnknownKey},
		{"kid of 257 bytes", with(func(h, _ map[string]any) { h["kid"] = strings.Repeat("k", 257) }), verify.ReasonUnknownKey},
		{"kid as an object", with(func(h, _ map[string]any) { h["kid"] = map[string]any{"kid": "test-key"} }), verify.ReasonUnknownKey},
		// claims JSON
		{"sub given twice, once escaped", raw(goodHeader, claimsWith(`"s\u0075b":"admin"`)), verify.ReasonMalformed},
		{"scope given twice", raw(goodHeader, claimsWith(`"scope":"Identity/Admin"`)), verify.ReasonMalformed},
		{"claims an array", raw(goodHeader, `[`+goodClaims+`]`), verify.ReasonMalformed},
		{"a second object after the claims", raw(goodHeader, goodClaims+`{"sub":"admin"}`), verify.ReasonMalformed},
		{"claims not UTF-8", raw(goodHeader, claimsWith("\"x\":\"\xff\"")), verify.ReasonMalformed},
		// iss, aud
		{"iss with a trailing slash", with(func(_, c map[string]any) { c["iss"] = issuerURL + "/" }), verify.ReasonIssuer},
		{"iss in upper case", with(func(_, c map[string]any) { c["iss"] = strings.ToUpper(issuerURL) }), verify.ReasonIssuer},
		{"iss as an array", with(func(_, c map[string]any) { c["iss"] = []string{issuerURL} }), verify.ReasonMalformed},
		{"iss missing", with(func(_, c map[string]any) { delete(c, "iss") }), verify.ReasonIssuer},
		{"aud in another case", with(func(_, c map[string]any) { c["aud"] = "Gatehouse" }), verify.ReasonAudience},
		{"aud as a space-separated list", with(func(_, c map[string]any) { c["aud"] = "other gatehouse" }), verify.ReasonAudience},
		{"aud nested in an array", with(func(_, c map[string]any) { c["aud"] = []any{[]string{"gatehouse"}} }), verify.ReasonAudience},
		{"aud an object", with(func(_, c map[string]any) { c["aud"] = map[string]bool{"gatehouse": true} }), verify.ReasonAudience},
		{"aud an empty array", with(func(_, c map[string]any) { c["aud"] = []string{} }), verify.ReasonAudience},
		{"aud missing", with(func(_, c map[string]any) { delete(c, "aud") }), verify.ReasonAudience},
		// times
		{"exp a numeric string", with(func(_, c map[string]any) { c["exp"] = "9999999999" }), verify.ReasonMalformed},
		{"exp null", with(func(_, c map[string]any) { c["exp"] = nil }), verify.ReasonMalformed},
		{"exp true", with(func(_, c map[string]any) { c["exp"] = true }), verify.ReasonMalformed},
		{"exp 1e20", with(func(_, c map[string]any) { c["exp"] = 1e20 }), verify.ReasonMalformed},
		{"exp past the year 9999", with(func(_, c map[string]any) { c["exp"] = 253402300800 }), verify.ReasonMalformed},
		{"exp 1e400", raw(goodHeader, strings.Replace(goodClaims, `"exp":`, `"exp":1e400,"x":`, 1)), verify.ReasonMalformed},
		{"nbf a string", with(func(_, c map[string]any) { c["nbf"] = "0" }), verify.ReasonMalformed},
		{"nbf negative", with(func(_, c map[string]any) { c["nbf"] = -1 }), verify.ReasonMalformed},
		{"nbf just past the leeway", with(func(_, c map[string]any) { c["nbf"] = now.Unix() + 11 }), verify.ReasonNotYetValid},
		{"iat a string", with(func(_, c map[string]any) { c["iat"] = "now" }), verify.ReasonMalformed},
		{"auth_time a string", with(func(_, c map[string]any) { c["auth_time"] = "now" }), verify.ReasonMalformed},
		// scope, sub, client_id
		{"scope split by a tab", with(func(_, c map[string]any) { c["scope"] = "a\tService/Admin" }), verify.ReasonMalformed},
		{"scope with a line separator", with(func(_, c map[string]any) { c["scope"] = "Service/Admin\u2028" }), verify.ReasonMalformed},
		{"scope array item with a space", with(func(_, c map[string]any) { c["scope"] = []string{"a Service/Admin"} }), verify.ReasonMalformed},
		{"scope array with an empty item", with(func(_, c map[string]any) { c["scope"] = []string{""} }), verify.ReasonMalformed},
		{"scope an object", with(func(_, c map[string]any) { c["scope"] = map[string]bool{"Service/Admin": true} }), verify.ReasonMalformed},
		{"scope a number", with(func(_, c map[string]any) { c["scope"] = 7 }), verify.ReasonMalformed},
		{"sub empty", with(func(_, c map[string]any) { c["sub"] = "" }), verify.ReasonMalformed},
		{"sub null", with(func(_, c map[string]any) { c["sub"] = nil }), verify.ReasonMalformed},
		{"sub a number", with(func(_, c map[string]any) { c["sub"] = 7 }), verify.ReasonMalformed},
		{"client_id an array", with(func(_, c map[string]any) { c["client_id"] = []string{"test-client"} }), verify.ReasonMalformed},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if id, err := f.v.Verify(t.Context(), tt.token); id != nil || reasonOf(err) != tt.want {
				t.Fatalf("got %+v, %v; want reason %s", id, err, tt.want)
			}
		})
	}

	accepted := []struct {
		name   string
		token  string
		scopes []string
	}{
		{"exp with a fraction", with(func(_, c map[string]any) { c["exp"] = float64(now.Unix()) + 0.5 }), []string{"Service/Admin"}},
		{"scope with doubled spaces", with(func(_, c map[string]any) { c["scope"] = " a  b " }), []string{"a", "b"}},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			id, err := f.v.Verify(t.Context(), tt.token)
			if err != nil || strings.Join(id.Scopes, " ") != strings.Join(tt.scopes, " ") {
				t.Fatalf("got %+v, %v", id, err)
			}
		})
	}
}

// mixedKeys is a key source holding an RSA key and an EC key.
type mixedKeys map[string]crypto.PublicKey

func (m mixedKeys) Key(_ context.Context, kid string) (crypto.PublicKey, error) {
	if k, ok := m[kid]; ok {
		return k, nil
	}
	return nil, verify.ErrUnknownKey
}

func (m mixedKeys) Published(kid string, key crypto.PublicKey) bool { return m[kid] == key }

// With several algorithms pinned and keys of both types published, a token
// whose alg does not fit its kid's key type is refused, and a signature
// made with the attacker's own key of the right type never verifies.
func TestAlgorithmKeyConfusion(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	is := verifytest.NewIssuer(t, issuerURL, clock)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	attackerEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := mixedKeys{"rsa": &is.Private.PublicKey, "ec": &ecKey.PublicKey}
	v, err := verify.New(t.Context(), verify.Config{Issuer: issuerURL, Keys: keys, Now: clock,
		Algorithms: []string{"RS256", "PS256", "ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding
	sign := func(alg, kid string, method jwt.SigningMethod, key any) string {
		h := map[string]any{"alg": alg, "typ": "at+jwt", "kid": kid}
		hj, _ := json.Marshal(h)
		cj, _ := json.Marshal(is.Claims("attacker", "Service/Admin"))
		input := b64.EncodeToString(hj) + "." + b64.EncodeToString(cj)
		sig, err := method.Sign(input, key)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + b64.EncodeToString(sig)
	}
	rs := sign("RS256", "rsa", jwt.SigningMethodRS256, is.Private)
	if _, err := v.Verify(t.Context(), rs); err != nil {
		t.Fatalf("the issuer's RS256 token: %v", err)
	}
	if _, err := v.Verify(t.Context(), sign("ES256", "ec", jwt.SigningMethodES256, ecKey)); err != nil {
		t.Fatalf("the issuer's ES256 token: %v", err)
	}
	rsParts := strings.Split(rs, ".")
	psHeader := b64.EncodeToString([]byte(`{"alg":"PS256","kid":"rsa","typ":"at+jwt"}`))
	// A header whose alg does not fit the kid's key type is refused before
	// the signature is looked at (bad_algorithm); one that fits, with a
	// signature of the wrong key, fails the signature check.
	tests := []struct {
		name   string
		token  string
		reason verify.Reason
	}{
		{"ES256 by the attacker's key under the RSA kid", sign("ES256", "rsa", jwt.SigningMethodES256, attackerEC), verify.ReasonAlgorithm},
		{"ES256 by the attacker's key under the EC kid", sign("ES256", "ec", jwt.SigningMethodES256, attackerEC), verify.ReasonSignature},
		{"RS256 header under the EC kid", sign("RS256", "ec", jwt.SigningMethodRS256, is.Private), verify.ReasonAlgorithm},
		{"PS256 header on an RS256 signature", psHeader + "." + rsParts[1] + "." + rsParts[2], verify.ReasonSignature},
		{"PS256 signature spliced onto other claims", func() string {
			p := strings.Split(sign("PS256", "rsa", jwt.SigningMethodPS256, is.Private), ".")
			other, _ := json.Marshal(is.Claims("admin", "Service/Admin"))
			return p[0] + "." + b64.EncodeToString(other) + "." + p[2]
		}(), verify.ReasonSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, err := v.Verify(t.Context(), tt.token); id != nil || reasonOf(err) != tt.reason {
				t.Fatalf("got %+v, %v; want %s", id, err, tt.reason)
			}
		})
	}
}
