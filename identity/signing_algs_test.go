package identity

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/keys"
)

// algsFixture keeps keys of every algorithm; the client "app" gets ES256
// access tokens and EdDSA ID tokens, the others the default (RS256).
func algsFixture(t *testing.T) *fixture {
	return newFixture(t, func(c *Config) {
		c.Keys.Algorithms = []string{keys.RS256, keys.ES256, keys.EdDSA}
		c.Clients[0].AccessTokenSigningAlg = keys.ES256
		c.Clients[0].IDTokenSignedResponseAlg = keys.EdDSA
	})
}

// tokenAlg is the "alg" of a token's header.
func tokenAlg(t *testing.T, tok string) string {
	t.Helper()
	head, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	var h struct{ Alg string }
	if err != nil || json.Unmarshal(raw, &h) != nil {
		t.Fatalf("bad header %q", head)
	}
	return h.Alg
}

// A client's tokens are signed with the algorithms it names: its access
// token with access_token_signing_alg (and accepted by the server's own
// check, userinfo), its ID token with id_token_signed_response_alg,
// verifiable with the JWKS's Ed25519 key and carrying an at_hash made
// with SHA-512, EdDSA's hash. A client that names none gets RS256, and
// discovery lists every algorithm. (It failed with mintAccess and mintID
// signing with the default algorithm, with halfHash using SHA-256 for
// EdDSA, and with discovery listing RS256 alone.)
func TestClientSigningAlgorithms(t *testing.T) {
	f := algsFixture(t)
	res := f.login("demo", "demo-pw", "scope", "openid Service/Market")
	at, idt := res.str("access_token"), res.str("id_token")
	if tokenAlg(t, at) != keys.ES256 || tokenAlg(t, idt) != keys.EdDSA {
		t.Fatalf("access token %s, ID token %s; want ES256, EdDSA", tokenAlg(t, at), tokenAlg(t, idt))
	}
	if r := f.userinfo("GET", at); r.status != http.StatusOK {
		t.Fatalf("userinfo refused the ES256 access token: %d %s", r.status, r.raw)
	}
	jwks := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathJWKS, nil))
	var set keys.JWKS
	if err := json.Unmarshal([]byte(jwks.raw), &set); err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(idt, claims, func(tok *jwt.Token) (any, error) {
		for _, k := range set.Keys {
			if k.Kid == tok.Header["kid"] && k.Kty == "OKP" && k.Alg == keys.EdDSA {
				x, err := base64.RawURLEncoding.DecodeString(k.X)
				return ed25519.PublicKey(x), err
			}
		}
		return nil, jwt.ErrTokenUnverifiable
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(f.clock.Now), jwt.WithIssuer(testIssuer), jwt.WithAudience("app"))
	if err != nil {
		t.Fatalf("the EdDSA ID token does not verify with the JWKS: %v", err)
	}
	sum := sha512.Sum512([]byte(at))
	if want := base64.RawURLEncoding.EncodeToString(sum[:32]); claims["at_hash"] != want {
		t.Fatalf("at_hash %v, want %s (SHA-512's left half)", claims["at_hash"], want)
	}
	conf := f.post(form("grant_type", "password", "client_id", "conf", "username", "demo", "password", "demo-pw", "scope", "openid"),
		basic("conf", "conf-secret"))
	if tokenAlg(t, conf.str("access_token")) != keys.RS256 || tokenAlg(t, conf.str("id_token")) != keys.RS256 {
		t.Fatalf("a client naming no algorithm: %s, %s", tokenAlg(t, conf.str("access_token")), tokenAlg(t, conf.str("id_token")))
	}
	disc := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathDiscovery, nil))
	var d Discovery
	if err := json.Unmarshal([]byte(disc.raw), &d); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.IDTokenSigningAlgValuesSupported, []string{keys.RS256, keys.ES256, keys.EdDSA}) {
		t.Fatalf("id_token_signing_alg_values_supported: %v", d.IDTokenSigningAlgValuesSupported)
	}
}

// A client may only name an algorithm the server keeps keys for, and
// never "none" or HMAC. (It failed with Config.Validate's check of the
// clients' algorithms removed: the server started, and the client's
// every token failed with no ES256 key.)
func TestClientSigningAlgorithmNeedsKeys(t *testing.T) {
	for name, alg := range map[string]string{"no ES256 keys": keys.ES256, "none": "none", "HMAC": "HS256"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(nil)
			cfg.Clients[0].IDTokenSignedResponseAlg = alg
			if err := cfg.Validate(); err == nil {
				t.Fatalf("a client with %s ID tokens on a server keeping RS256 keys was accepted", alg)
			}
		})
	}
}

// A logout token is signed with the algorithm of the client's ID tokens,
// as Back-Channel Logout signs it, or the server's first when the client
// names none. (It failed when LogoutToken always signed with the first:
// a relying party pinning EdDSA refused its RS256 logout token.)
func TestLogoutTokenAlgorithm(t *testing.T) {
	f := algsFixture(t)
	for alg, want := range map[string]string{keys.EdDSA: keys.EdDSA, keys.ES256: keys.ES256, "": keys.RS256} {
		tok, _, err := f.srv.tokens.LogoutToken("app", alg, "sub-demo", "sid-1")
		if err != nil {
			t.Fatal(err)
		}
		if got := tokenAlg(t, tok); got != want {
			t.Fatalf("logout token for a client of %q ID tokens: %s, want %s", alg, got, want)
		}
	}
}
