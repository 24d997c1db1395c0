package authorize

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

const issuer = "https://id.example"

var now = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

// keys of the client "ro", registered in its request-object key set.
var (
	rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _  = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	// a key of nobody's
	strayKey, _ = rsa.GenerateKey(rand.Reader, 2048)
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jwks(t *testing.T) []byte {
	t.Helper()
	ecPub, err := ecKey.PublicKey.Bytes() // uncompressed point
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa-1", "use": "sig", "n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": b64(ecPub[1:33]), "y": b64(ecPub[33:])},
	}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testEndpoint is an endpoint with what parse needs: clients, the issuer,
// the clock.
func testEndpoint(t *testing.T) *Endpoint {
	t.Helper()
	reg, err := clients.NewRegistry([]clients.Config{
		{ID: "ro", Public: true, GrantTypes: []string{oauth.GrantAuthorizationCode, oauth.GrantImplicit},
			Scopes: []string{"openid", "profile"}, RedirectURIs: []string{"https://ro.example/cb", "https://ro.example/other"},
			RequestObjectJWKS: jwks(t)},
		{ID: "bare", Public: true, GrantTypes: []string{oauth.GrantAuthorizationCode},
			Scopes: []string{"openid"}, RedirectURIs: []string{"https://bare.example/cb"}},
	}, nil, clients.Defaults{AccessTokenLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return &Endpoint{cfg: Config{Issuer: issuer, Clients: reg, Now: func() time.Time { return now }}}
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func unsigned(t *testing.T, claims map[string]any) string {
	t.Helper()
	body, _ := json.Marshal(claims)
	return b64([]byte(`{"alg":"none"}`)) + "." + b64(body) + "."
}

// baseClaims are a request object's parameters, for client ro.
func baseClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": "ro", "aud": issuer, "exp": now.Add(time.Minute).Unix(), "client_id": "ro",
		"response_type": "code id_token", "redirect_uri": "https://ro.example/other", "scope": "openid profile",
		"nonce": "from-object", "state": "obj-state", "max_age": 60,
		"code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
	}
}

func parseWith(t *testing.T, e *Endpoint, client string, obj string, extra ...string) (*request, *pageError, *oauth.Error) {
	t.Helper()
	v := url.Values{"client_id": {client}, "response_type": {"code id_token"}, "request": {obj},
		"redirect_uri": {"https://ro.example/cb"}, "state": {"query-state"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	r := httptest.NewRequest(http.MethodGet, issuer+"/connect/authorize?"+v.Encode(), nil)
	q, _, pe, perr := e.parse(httptest.NewRecorder(), r)
	return q, pe, perr
}

func TestRequestObjectAccepted(t *testing.T) {
	e := testEndpoint(t)
	noAud := baseClaims()
	delete(noAud, "aud")
	delete(noAud, "iss")
	for name, obj := range map[string]string{
		"RS256":             sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", baseClaims()),
		"ES256":             sign(t, jwt.SigningMethodES256, ecKey, "ec-1", baseClaims()),
		"RS256 without kid": sign(t, jwt.SigningMethodRS256, rsaKey, "", baseClaims()),
		"unsigned":          unsigned(t, noAud),
	} {
		t.Run(name, func(t *testing.T) {
			q, pe, perr := parseWith(t, e, "ro", obj)
			if pe != nil || perr != nil {
				t.Fatalf("refused: %v %v", pe, perr)
			}
			// The object's parameters win over the query's.
			if q.RedirectURI != "https://ro.example/other" || q.Nonce != "from-object" || q.State != "obj-state" ||
				q.MaxAge != 60 || q.Method != "S256" || !q.Code || !q.IDToken {
				t.Fatalf("request %+v", q)
			}
		})
	}
}

func TestRequestObjectRefused(t *testing.T) {
	e := testEndpoint(t)
	with := func(k string, v any) jwt.MapClaims {
		c := baseClaims()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	hs := sign(t, jwt.SigningMethodHS256, []byte(strings.Repeat("k", 32)), "rsa-1", baseClaims())
	for _, tc := range []struct {
		name, client, obj string
	}{
		{"HMAC", "ro", hs},
		{"signed by another key", "ro", sign(t, jwt.SigningMethodRS256, strayKey, "rsa-1", baseClaims())},
		{"unknown kid", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-9", baseClaims())},
		{"RS256 under the EC kid", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "ec-1", baseClaims())},
		{"signed, client without keys", "bare", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("client_id", "bare"))},
		{"iss another client", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("iss", "bare"))},
		{"aud another issuer", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("aud", "https://other.example"))},
		{"signed without aud", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("aud", nil))},
		{"expired", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("exp", now.Add(-time.Hour).Unix()))},
		{"not yet valid", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("nbf", now.Add(time.Hour).Unix()))},
		{"client_id differs", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("client_id", "bare"))},
		{"response_type differs", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("response_type", "code"))},
		{"nested request_uri", "ro", sign(t, jwt.SigningMethodRS256, rsaKey, "rsa-1", with("request_uri", "https://x/"))},
		{"none with a signature", "ro", strings.TrimSuffix(unsigned(t, with("aud", nil)), ".") + ".c2ln"},
		{"not a JWS", "ro", "abc.def"},
		{"tampered payload", "ro", tamper(sign(t, jwt.SigningMethodES256, ecKey, "ec-1", baseClaims()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redirect := "https://" + tc.client + ".example/cb"
			q, pe, perr := parseWith(t, e, tc.client, tc.obj, "redirect_uri", redirect)
			if pe != nil {
				t.Fatalf("page error %v", pe)
			}
			if perr == nil || perr.Code != oauth.ErrInvalidRequestObject {
				t.Fatalf("error %v, want invalid_request_object", perr)
			}
			// Nothing of the object is used: the error goes to the
			// query's redirect URI, with its state.
			if q.RedirectURI != redirect || q.State != "query-state" {
				t.Fatalf("request %+v", q)
			}
		})
	}
}

func tamper(s string) string {
	parts := strings.Split(s, ".")
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	body = []byte(strings.Replace(string(body), "from-object", "from-attack", 1))
	return parts[0] + "." + b64(body) + "." + parts[2]
}
