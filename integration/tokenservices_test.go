package integration

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The token services of the identity server: userinfo (OpenID Connect Core
// §5.3), introspection (RFC 7662) and revocation (RFC 7009). The Node test
// (node/tokenservices.test.mjs) checks their behaviour with openid-client;
// these helpers drive them from Go, for the log checks.

// endpoint returns the discovery document's URL named name.
func (g *Gatehouse) endpoint(t testing.TB, name string) string {
	t.Helper()
	ep, _ := g.Discovery(t)[name].(string)
	if ep == "" {
		t.Fatalf("discovery has no %s", name)
	}
	return ep
}

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
