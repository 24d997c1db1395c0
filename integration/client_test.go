package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// The requests tests send to a gatehouse, and the decoding of its answers.
// Every request goes through g.Client, which records the tokens it sees
// for the log checks. JWTs are in client_jwt_test.go, requests through a
// guarding gatehouse in client_guard_test.go.

// The demo clients and users of Caddyfile.example and examples/users.json
// (docs/design.md, "The demo"). DEMO-ONLY credentials.
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

// tokenResponse is the token endpoint's success body (docs/api-surface.md §2.2),
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

// demoAppConfig is demo-app as golang.org/x/oauth2 sees it: a public client
// sending client_id in the form and no secret.
func demoAppConfig(t testing.TB, g *Gatehouse) *oauth2.Config {
	return &oauth2.Config{
		ClientID: publicClient,
		Endpoint: oauth2.Endpoint{
			TokenURL:  g.TokenEndpoint(t),
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
}

// clientContext makes golang.org/x/oauth2 use g.Client.
func clientContext(t testing.TB, g *Gatehouse) context.Context {
	return context.WithValue(t.Context(), oauth2.HTTPClient, g.Client)
}

// oidcContext makes go-oidc use g.Client.
func oidcContext(t testing.TB, g *Gatehouse) context.Context {
	return oidc.ClientContext(t.Context(), g.Client)
}

func mustRequest(t testing.TB, method, target string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
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

// endpoint returns the discovery document's URL named name.
func (g *Gatehouse) endpoint(t testing.TB, name string) string {
	t.Helper()
	ep, _ := g.Discovery(t)[name].(string)
	if ep == "" {
		t.Fatalf("discovery has no %s", name)
	}
	return ep
}

// TokenEndpoint is token_endpoint of the discovery document, as §4.2 says
// clients take it.
func (g *Gatehouse) TokenEndpoint(t testing.TB) string {
	t.Helper()
	return g.endpoint(t, "token_endpoint")
}

// JWKSURI is jwks_uri of the discovery document.
func (g *Gatehouse) JWKSURI(t testing.TB) string {
	t.Helper()
	return g.endpoint(t, "jwks_uri")
}

// jwksKids returns the kids the JWKS publishes.
func jwksKids(t testing.TB, g *Gatehouse) []string {
	t.Helper()
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.JWKSURI(t), nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("JWKS: %s: %s", resp.Status, body)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatalf("JWKS: %v", err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// waitForKids polls g's JWKS until it publishes n keys and returns their
// kids.
func waitForKids(t testing.TB, g *Gatehouse, n int) []string {
	t.Helper()
	deadline := time.Now().Add(rotateTimeout)
	for {
		kids := jwksKids(t, g)
		if len(kids) == n {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the JWKS has kids %q after %v, want %d keys", kids, rotateTimeout, n)
		}
		time.Sleep(pollInterval)
	}
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

// specRequest builds a token request as docs/api-surface.md §4.2 shows it: the
// form fields in the order shown, Accept, Content-Type and Content-Length.
func specRequest(t testing.TB, g *Gatehouse, body string) *http.Request {
	t.Helper()
	req := mustRequest(t, http.MethodPost, g.TokenEndpoint(t), strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	req.ContentLength = int64(len(body))
	return req
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

// checkSpecResponse checks a §2.2 body and the §4.2 headers.
func checkSpecResponse(t testing.TB, resp *http.Response, body []byte) tokenResponse {
	t.Helper()
	tok := decodeToken(t, resp, body)
	for name, want := range map[string]string{
		"Cache-Control":   "no-store, no-cache, max-age=0",
		"Pragma":          "no-cache",
		"Referrer-Policy": "no-referrer",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no Strict-Transport-Security header")
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}

	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"access_token", "expires_in", "token_type", "refresh_token", "scope"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("the response has no %s", name)
		}
	}
	if n, err := tok.ExpiresIn.Int64(); err != nil || n != 3600 {
		t.Errorf("expires_in = %s, want the integer 3600", tok.ExpiresIn)
	}
	if tok.TokenType != "Bearer" {
		t.Errorf("token_type = %q, want Bearer", tok.TokenType)
	}
	if strings.Count(tok.AccessToken, ".") != 2 {
		t.Error("access_token is not a compact JWT")
	}
	if tok.RefreshToken == "" {
		t.Error("no refresh_token, though offline_access is granted")
	}
	if !sameScopes(tok.Scope, demoScopes) {
		t.Errorf("scope = %q, want %q", tok.Scope, demoScopes)
	}
	return tok
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

// basicCredentials is the credential of an RFC 6749 §2.3.1 Basic header.
func basicCredentials(clientID, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(secret)))
}

// The token services of the identity server: userinfo (OpenID Connect Core
// §5.3), introspection (RFC 7662) and revocation (RFC 7009). The Node test
// (node/tokenservices.test.mjs) checks their behaviour with openid-client;
// these helpers drive them from Go, for the log checks.

// PostForm posts form to the discovery endpoint named name, with Basic
// credentials when basicUser is not empty.
func (g *Gatehouse) PostForm(t testing.TB, name string, form url.Values, basicUser, basicSecret string) (*http.Response, []byte) {
	t.Helper()
	req := mustRequest(t, http.MethodPost, g.endpoint(t, name), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.Header.Set("Authorization", "Basic "+basicCredentials(basicUser, basicSecret))
	}
	return g.Do(t, req)
}

// Userinfo calls the userinfo endpoint with token as the bearer token.
func (g *Gatehouse) Userinfo(t testing.TB, token string) (*http.Response, []byte) {
	t.Helper()
	req := mustRequest(t, http.MethodGet, g.endpoint(t, "userinfo_endpoint"), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return g.Do(t, req)
}

// Introspect introspects token as demo-service with secret (Basic).
func (g *Gatehouse) Introspect(t testing.TB, token, secret string) (*http.Response, []byte) {
	t.Helper()
	return g.PostForm(t, "introspection_endpoint", url.Values{"token": {token}}, serviceClient, secret)
}

// Revoke revokes token as the public demo-app.
func (g *Gatehouse) Revoke(t testing.TB, token string) (*http.Response, []byte) {
	t.Helper()
	return g.PostForm(t, "revocation_endpoint", url.Values{"token": {token}, "client_id": {publicClient}}, "", "")
}

// wantStatus fails t unless resp has status.
func wantStatus(t testing.TB, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: %s, want %d; body %s", what, resp.Status, status, body)
	}
}

// scrapeMetrics reads /metrics on g's admin endpoint.
func scrapeMetrics(t testing.TB, g *Gatehouse) []byte {
	t.Helper()
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, "http://"+g.Admin+"/metrics", nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics on the admin endpoint: %s: %s", resp.Status, body)
	}
	return body
}

// metricValue returns the value of the sample named series (name and
// labels as Prometheus prints them) in a text exposition, or -1.
func metricValue(metrics []byte, series string) float64 {
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
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
