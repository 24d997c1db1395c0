package integration

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The demo clients and users of Caddyfile.example and examples/users.json
// (DESIGN.md, "The demo"). DEMO-ONLY credentials.
const (
	publicClient  = "demo-app"
	serviceClient = "demo-service"
	serviceSecret = "demo-secret"
	serviceScope  = "Service/Market"
	apiAudience   = "gatehouse"
)

// demoScopes is what demo-app gets for the demo user when it sends no scope:
// every scope the client may ask for that the user holds.
var demoScopes = []string{"openid", "profile", "email", "offline_access", "Service/Market", "Service/News"}

// tokenResponse is the token endpoint's success body (interface.md §2.2),
// plus the id_token OpenID Connect adds.
type tokenResponse struct {
	AccessToken  string      `json:"access_token"`
	ExpiresIn    json.Number `json:"expires_in"`
	TokenType    string      `json:"token_type"`
	RefreshToken string      `json:"refresh_token"`
	Scope        string      `json:"scope"`
	IDToken      string      `json:"id_token"`
}

// errorResponse is an RFC 6749 §5.2 error body.
type errorResponse struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// subjectOf returns the fixed subject id examples/users.json gives username.
func subjectOf(t testing.TB, username string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Users []struct {
			Username string `json:"username"`
			Subject  string `json:"subject"`
		} `json:"users"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("examples/users.json: %v", err)
	}
	for _, u := range file.Users {
		if u.Username == username && u.Subject != "" {
			return u.Subject
		}
	}
	t.Fatalf("examples/users.json has no subject for %q", username)
	return ""
}

// Discovery fetches the discovery document.
func (g *Gatehouse) Discovery(t testing.TB) map[string]any {
	t.Helper()
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.Issuer+"/.well-known/openid-configuration", nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %s: %s", resp.Status, body)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("discovery: %v: %s", err, body)
	}
	return doc
}

// TokenEndpoint is token_endpoint of the discovery document, as §4.2 says
// clients take it.
func (g *Gatehouse) TokenEndpoint(t testing.TB) string {
	t.Helper()
	ep, _ := g.Discovery(t)["token_endpoint"].(string)
	if ep == "" {
		t.Fatal("discovery has no token_endpoint")
	}
	return ep
}

// JWKSURI is jwks_uri of the discovery document.
func (g *Gatehouse) JWKSURI(t testing.TB) string {
	t.Helper()
	uri, _ := g.Discovery(t)["jwks_uri"].(string)
	if uri == "" {
		t.Fatal("discovery has no jwks_uri")
	}
	return uri
}

// Do sends req with g.Client and returns the response with its body read.
func (g *Gatehouse) Do(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := g.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, body
}

// PostToken posts form to the token endpoint, with Basic credentials when
// basicUser is not empty.
func (g *Gatehouse) PostToken(t testing.TB, form url.Values, basicUser, basicSecret string) (*http.Response, []byte) {
	t.Helper()
	req := mustRequest(t, http.MethodPost, g.TokenEndpoint(t), strings.NewReader(form.Encode()))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.Header.Set("Authorization", "Basic "+basicCredentials(basicUser, basicSecret))
	}
	return g.Do(t, req)
}

// PasswordGrant logs username in through demo-app with no scope (as §4.2)
// and requires success.
func (g *Gatehouse) PasswordGrant(t testing.TB, username, password string) tokenResponse {
	t.Helper()
	resp, body := g.PostToken(t, url.Values{
		"grant_type": {"password"},
		"username":   {username},
		"password":   {password},
		"client_id":  {publicClient},
	}, "", "")
	return decodeToken(t, resp, body)
}

// RefreshGrant refreshes through demo-app (as §4.3).
func (g *Gatehouse) RefreshGrant(t testing.TB, refreshToken string) (*http.Response, []byte) {
	t.Helper()
	return g.PostToken(t, url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {refreshToken},
		"client_id":     {publicClient},
	}, "", "")
}

// Refresh refreshes through demo-app and requires success.
func (g *Gatehouse) Refresh(t testing.TB, refreshToken string) tokenResponse {
	t.Helper()
	resp, body := g.RefreshGrant(t, refreshToken)
	return decodeToken(t, resp, body)
}

// decodeToken requires a 200 token response and decodes it.
func decodeToken(t testing.TB, resp *http.Response, body []byte) tokenResponse {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token endpoint: %s: %s", resp.Status, body)
	}
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil {
		t.Fatalf("token response: %v: %s", err, body)
	}
	return tr
}

// decodeError requires an RFC 6749 §5.2 JSON error body.
func decodeError(t testing.TB, resp *http.Response, body []byte) errorResponse {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var e errorResponse
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		t.Fatalf("error body is not an RFC 6749 §5.2 error (%v): %s", err, body)
	}
	return e
}

func mustRequest(t testing.TB, method, target string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// basicCredentials is the credential of an RFC 6749 §2.3.1 Basic header.
func basicCredentials(clientID, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(secret)))
}

// decodeJWT returns a compact JWT's header and claims, unverified.
func decodeJWT(t testing.TB, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %d parts", len(parts))
	}
	return decodeSegment(t, parts[0]), decodeSegment(t, parts[1])
}

func decodeSegment(t testing.TB, seg string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatalf("JWT segment: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("JWT segment: %v", err)
	}
	return m
}

// tamperClaims returns token with one claim changed and the signature
// kept.
func tamperClaims(t testing.TB, token, claim string, value any) string {
	t.Helper()
	parts := strings.Split(token, ".")
	_, claims := decodeJWT(t, token)
	claims[claim] = value
	parts[1] = encodeSegment(t, claims)
	return strings.Join(parts, ".")
}

// tamperHeader returns token with one header member changed and the
// signature kept.
func tamperHeader(t testing.TB, token, member, value string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	header, _ := decodeJWT(t, token)
	header[member] = value
	parts[0] = encodeSegment(t, header)
	return strings.Join(parts, ".")
}

// tamperSignature returns token with one byte of its signature flipped.
func tamperSignature(t testing.TB, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatalf("JWT signature: %v", err)
	}
	sig[len(sig)/2] ^= 0x01
	parts[2] = base64.RawURLEncoding.EncodeToString(sig)
	return strings.Join(parts, ".")
}

func encodeSegment(t testing.TB, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// sameScopes reports whether the space-delimited scope string holds exactly
// want, in any order.
func sameScopes(scope string, want []string) bool {
	got := strings.Fields(scope)
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	return slices.Equal(got, w)
}

// writeConfig writes a Caddyfile (named so, for the adapter) in a new
// directory and returns its path.
func writeConfig(t testing.TB, name, config string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
