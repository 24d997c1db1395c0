// Package verifytest makes access tokens for tests, good and hostile: one
// table of attacks that every consumer of the verifier (route protection,
// userinfo, the message and query services) runs, each refused with its
// own reason. Of identity it imports package verify only.
package verifytest

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// Issuer signs test tokens with an RSA key and is a verify.KeySource for
// that key.
type Issuer struct {
	URL      string
	Audience string
	Kid      string
	Private  *rsa.PrivateKey
	Now      func() time.Time

	mu      sync.Mutex
	removed bool
}

var (
	keyOnce sync.Once
	keys    [2]*rsa.PrivateKey
)

// testKeys are generated once per test binary: RSA generation is slow.
func testKeys(t testing.TB) [2]*rsa.PrivateKey {
	keyOnce.Do(func() {
		for i := range keys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			keys[i] = k
		}
	})
	return keys
}

// NewIssuer returns a test issuer at url with the audience "gatehouse".
func NewIssuer(t testing.TB, url string, now func() time.Time) *Issuer {
	return &Issuer{URL: url, Audience: "gatehouse", Kid: "test-key", Private: testKeys(t)[0], Now: now}
}

// Key implements verify.KeySource.
func (is *Issuer) Key(_ context.Context, kid string) (crypto.PublicKey, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if kid != is.Kid || is.removed {
		return nil, verify.ErrUnknownKey
	}
	return &is.Private.PublicKey, nil
}

// Published implements verify.KeySource.
func (is *Issuer) Published(kid string, key crypto.PublicKey) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	return kid == is.Kid && !is.removed && key == crypto.PublicKey(&is.Private.PublicKey)
}

// RemoveKey unpublishes the issuer's key.
func (is *Issuer) RemoveKey() {
	is.mu.Lock()
	is.removed = true
	is.mu.Unlock()
}

// Claims returns good access-token claims for subject with scopes.
func (is *Issuer) Claims(subject string, scopes ...string) map[string]any {
	now := is.Now()
	return map[string]any{
		"iss": is.URL, "sub": subject, "aud": is.Audience, "client_id": "test-client",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Unix(),
		"jti": "jti-" + subject + "-" + strings.Join(scopes, "+"), "scope": strings.Join(scopes, " "),
	}
}

// Header returns a good access-token header.
func (is *Issuer) Header() map[string]any {
	return map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": is.Kid}
}

// Sign makes a compact JWS of header and claims signed with key (RS256).
func Sign(header, claims map[string]any, key *rsa.PrivateKey) string {
	input := encode(header) + "." + encode(claims)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Token signs good claims for subject with scopes.
func (is *Issuer) Token(subject string, scopes ...string) string {
	return Sign(is.Header(), is.Claims(subject, scopes...), is.Private)
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Case is a hostile token and the reason it must be refused for.
type Case struct {
	Name   string
	Token  string
	Reason verify.Reason
}

// Hostile returns the table of hostile tokens against is, each refused
// with its own reason. Scopes go into the claims so that a consumer that
// checks scopes would otherwise let the token through.
func (is *Issuer) Hostile(scopes ...string) []Case {
	good := func() (map[string]any, map[string]any) { return is.Header(), is.Claims("attacker", scopes...) }
	with := func(mod func(h, c map[string]any)) string {
		h, c := good()
		mod(h, c)
		return Sign(h, c, is.Private)
	}
	attackerKey := testKeys(nil)[1]
	now := is.Now()

	h, c := good()
	h["alg"] = "none"
	algNone := encode(h) + "." + encode(c) + "."

	h, c = good()
	h["alg"] = "HS256"
	pubDER, _ := x509.MarshalPKIXPublicKey(&is.Private.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	mac := hmac.New(sha256.New, pubPEM)
	hsInput := encode(h) + "." + encode(c)
	mac.Write([]byte(hsInput))
	hs256 := hsInput + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	parts := strings.Split(is.Token("victim", scopes...), ".")
	_, c = good()
	c["sub"] = "admin"
	altered := parts[0] + "." + encode(c) + "." + parts[2]

	attackerJWK := map[string]any{"kty": "RSA", "kid": "evil",
		"n": base64.RawURLEncoding.EncodeToString(attackerKey.N.Bytes()), "e": "AQAB"}
	headerAttack := func(name string, value any) string {
		h, c := good()
		h[name] = value
		return Sign(h, c, attackerKey)
	}
	foreign := func() string {
		h, c := good()
		c["iss"] = "https://other-issuer.example"
		return Sign(h, c, attackerKey)
	}()
	big := with(func(_, c map[string]any) { c["pad"] = strings.Repeat("x", 9<<10) })

	// Members appended to a good JSON object, and claims under names that
	// encoding/json would match without regard to case.
	appendMember := func(v map[string]any, member string) string {
		b, _ := json.Marshal(v)
		return strings.TrimSuffix(string(b), "}") + "," + member + "}"
	}
	h, c = good()
	dupSub := SignRaw(mustJSON(h), appendMember(c, `"sub":"admin"`), is.Private)
	h, c = good()
	dupAlg := SignRaw(appendMember(h, `"alg":"none"`), mustJSON(c), is.Private)
	h, c = good()
	c["ISS"] = c["iss"]
	delete(c, "iss")
	upperIss := Sign(h, c, is.Private)
	h, c = good()
	delete(c, "sub")
	c["ſub"] = "admin" // "ſub": encoding/json folds ſ to s
	foldedSub := Sign(h, c, is.Private)

	// One token, two spellings: the signature's unused low bits set, and a
	// line break inside a segment (Go's decoder skips CR and LF).
	good2 := is.Token("attacker", scopes...)
	last := strings.IndexByte(b64Alphabet, good2[len(good2)-1])
	lowBits := good2[:len(good2)-1] + string(b64Alphabet[last^1])
	cut := strings.LastIndexByte(good2, '.') + 10
	lineBreak := good2[:cut] + "\r\n" + good2[cut:]

	return []Case{
		{"alg none", algNone, verify.ReasonAlgorithm},
		{"HS256 signed with the RSA public key", hs256, verify.ReasonAlgorithm},
		{"signature over altered claims", altered, verify.ReasonSignature},
		{"key id nobody published", with(func(h, _ map[string]any) { h["kid"] = "nobody" }), verify.ReasonUnknownKey},
		{"jku header to the attacker's key set", headerAttack("jku", "https://attacker.example/jwks"), verify.ReasonForeignKey},
		{"jwk header with the attacker's key", headerAttack("jwk", attackerJWK), verify.ReasonForeignKey},
		{"x5u header to the attacker's certificate", headerAttack("x5u", "https://attacker.example/cert.pem"), verify.ReasonForeignKey},
		{"expired", with(func(_, c map[string]any) {
			c["exp"], c["iat"], c["nbf"] = now.Add(-time.Hour).Unix(), now.Add(-2*time.Hour).Unix(), now.Add(-2*time.Hour).Unix()
		}), verify.ReasonExpired},
		{"not yet valid", with(func(_, c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), verify.ReasonNotYetValid},
		{"wrong issuer", with(func(_, c map[string]any) { c["iss"] = "https://evil.example" }), verify.ReasonIssuer},
		{"wrong audience", with(func(_, c map[string]any) { c["aud"] = "another-api" }), verify.ReasonAudience},
		{"wrong typ", with(func(h, _ map[string]any) { h["typ"] = "JWT" }), verify.ReasonType},
		{"id token as access token", with(func(h, c map[string]any) { h["typ"] = "JWT"; c["aud"] = "test-client" }), verify.ReasonType},
		{"missing exp", with(func(_, c map[string]any) { delete(c, "exp") }), verify.ReasonMissingExpiry},
		{"token from another issuer", foreign, verify.ReasonSignature},
		{"token over 8 KiB", big, verify.ReasonTooLarge},
		{"not a JWT", "not-a-token", verify.ReasonMalformed},
		{"a claim given twice (second sub)", dupSub, verify.ReasonMalformed},
		{"a header member given twice (second alg)", dupAlg, verify.ReasonMalformed},
		{"iss spelled ISS", upperIss, verify.ReasonIssuer},
		{"sub spelled with a long s", foldedSub, verify.ReasonMalformed},
		{"nbf of 1e300", with(func(_, c map[string]any) { c["nbf"] = 1e300 }), verify.ReasonMalformed},
		{"exp before the epoch", with(func(_, c map[string]any) { c["exp"] = -1 }), verify.ReasonMalformed},
		{"scope split by a no-break space", with(func(_, c map[string]any) { c["scope"] = "a\u00a0Service/Admin" }), verify.ReasonMalformed},
		{"signature with unused low bits set", lowBits, verify.ReasonMalformed},
		{"line break inside the signature", lineBreak, verify.ReasonMalformed},
	}
}

// b64Alphabet is the base64url alphabet, in value order.
const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// SignRaw makes a compact JWS of a header and claims given as JSON text,
// signed with key (RS256): for members a map cannot hold (duplicates).
func SignRaw(headerJSON, claimsJSON string, key *rsa.PrivateKey) string {
	b64 := base64.RawURLEncoding
	input := b64.EncodeToString([]byte(headerJSON)) + "." + b64.EncodeToString([]byte(claimsJSON))
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64.EncodeToString(sig)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// JWKS returns the issuer's public key as a JWK Set.
func (is *Issuer) JWKS() []byte {
	b, err := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": is.Kid,
		"n": base64.RawURLEncoding.EncodeToString(is.Private.N.Bytes()), "e": "AQAB",
	}}})
	if err != nil {
		panic(err)
	}
	return b
}
