package identity

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/tokens"
)

// TestAuthorizeBadClientOrRedirect: an unknown client, or a redirect URI
// the client has not registered (or a variant of one), is an error page:
// never a redirect, and no login form.
func TestAuthorizeBadClientOrRedirect(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	for name, params := range map[string]url.Values{
		"unknown client":        codeRequest("client_id", "nobody"),
		"no client":             codeRequest("client_id", ""),
		"no redirect_uri (two)": codeRequest("redirect_uri", ""),
		"prefix":                codeRequest("redirect_uri", "http://127.0.0.1/c"),
		"suffix":                codeRequest("redirect_uri", "http://127.0.0.1/cb/evil"),
		"case":                  codeRequest("redirect_uri", "http://127.0.0.1/CB"),
		"userinfo":              codeRequest("redirect_uri", "http://evil@127.0.0.1/cb"),
		"userinfo before host":  codeRequest("redirect_uri", "http://127.0.0.1:80@evil.example/cb"),
		"fragment":              codeRequest("redirect_uri", "http://127.0.0.1/cb#x"),
		"query added":           codeRequest("redirect_uri", "https://spa.example/cb?tenant=a&x=1"),
		"query dropped":         codeRequest("redirect_uri", "https://spa.example/cb"),
		"localhost":             codeRequest("redirect_uri", "http://localhost/cb"),
		"other host":            codeRequest("redirect_uri", "https://evil.example/cb"),
		"another client's":      codeRequest("redirect_uri", webRedirect),
		"repeated redirect_uri": {"response_type": {"code"}, "client_id": {"spa"}, "redirect_uri": {spaRedirect, "https://evil.example/"}},
		"repeated client_id":    {"response_type": {"code"}, "client_id": {"spa", "web"}, "redirect_uri": {spaRedirect}},
	} {
		t.Run(name, func(t *testing.T) {
			p := newBrowser(t, f).authorize(params)
			if p.status != http.StatusBadRequest || p.location != nil || !strings.Contains(p.body, "Sign-in failed") ||
				strings.Contains(p.body, `name="password"`) {
				t.Fatalf("%d %v %s", p.status, p.location, p.body)
			}
			if p.header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("headers %v", p.header)
			}
		})
	}
	if p := newBrowser(t, f).do(mustNewRequest(t, http.MethodPut, testIssuer+PathAuthorize)); p.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", p.status)
	}
}

// TestAuthorizeErrorsRedirect: once the client and redirect URI are good,
// errors go back to the redirect URI, in the response mode, with state.
func TestAuthorizeErrorsRedirect(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	implicit := func(extra ...string) url.Values {
		v := form("response_type", "id_token token", "client_id", "web", "redirect_uri", webRedirect,
			"scope", "openid", "state", "st-1", "nonce", "n")
		for i := 0; i+1 < len(extra); i += 2 {
			if extra[i+1] == "" {
				v.Del(extra[i])
			} else {
				v.Set(extra[i], extra[i+1])
			}
		}
		return v
	}
	for _, tc := range []struct {
		name     string
		params   url.Values
		fragment bool
		want     string
	}{
		{"response_type missing", codeRequest("response_type", ""), false, "invalid_request"},
		{"response_type unknown", codeRequest("response_type", "code bogus"), false, "unsupported_response_type"},
		{"response_type repeated part", codeRequest("response_type", "code code"), false, "unsupported_response_type"},
		{"response_type the client may not use", codeRequest("response_type", "id_token", "nonce", "n"), true, "unauthorized_client"},
		{"implicit for a code-only client", codeRequest("response_type", "code token"), true, "unauthorized_client"},
		{"scope the client may not ask", codeRequest("scope", "openid Service/Trading"), false, "invalid_scope"},
		{"PKCE missing for a public client", codeRequest("code_challenge", "", "code_challenge_method", ""), false, "invalid_request"},
		{"PKCE plain for an S256 client", codeRequest("code_challenge", verifier, "code_challenge_method", "plain"), false, "invalid_request"},
		{"PKCE plain by default", codeRequest("code_challenge", verifier, "code_challenge_method", ""), false, "invalid_request"},
		{"PKCE method unknown", codeRequest("code_challenge_method", "S512"), false, "invalid_request"},
		{"PKCE challenge malformed", codeRequest("code_challenge", "short"), false, "invalid_request"},
		{"prompt none with login", codeRequest("prompt", "none login"), false, "invalid_request"},
		{"prompt unknown", codeRequest("prompt", "bogus"), false, "invalid_request"},
		{"max_age negative", codeRequest("max_age", "-1"), false, "invalid_request"},
		{"max_age not a number", codeRequest("max_age", "1h"), false, "invalid_request"},
		{"request_uri", codeRequest("request_uri", "https://spa.example/r"), false, "request_uri_not_supported"},
		{"response_mode unknown", codeRequest("response_mode", "web_message"), false, "invalid_request"},
		{"repeated scope", withRepeat(codeRequest(), "scope", "openid"), false, "invalid_request"},
		{"nonce missing for id_token", implicit("nonce", ""), true, "invalid_request"},
		{"id_token without openid", implicit("scope", "profile"), true, "invalid_scope"},
		{"tokens in a query", implicit("response_mode", "query"), true, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newBrowser(t, f).authorize(tc.params)
			if p.status != http.StatusFound {
				t.Fatalf("%d %s", p.status, p.body)
			}
			v := p.result(t, tc.fragment)
			if v.Get("error") != tc.want || v.Get("state") != "st-1" || v.Get("iss") != testIssuer || v.Has("code") {
				t.Fatalf("redirect %v, want error %s", p.location, tc.want)
			}
		})
	}
}

func withRepeat(v url.Values, k, extra string) url.Values {
	v[k] = append(v[k], extra)
	return v
}

func mustNewRequest(t *testing.T, method, u string) *http.Request {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestPlainPKCE: plain only for a client configured for it; its verifier
// is the challenge itself.
func TestPlainPKCE(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.login(b.authorize(codeRequest("client_id", "plain", "scope", "openid", "code_challenge", verifier,
		"code_challenge_method", "plain")), "demo", "demo-pw")
	code := p.result(t, false).Get("code")
	if res := f.exchange("plain", code, spaRedirect, tokens.S256Challenge(verifier)); res.str("error") != "invalid_grant" {
		t.Fatalf("a wrong plain verifier: %d %s", res.status, res.raw)
	}
	if res := f.exchange("plain", code, spaRedirect, verifier); res.status != 200 {
		t.Fatalf("plain exchange: %d %s", res.status, res.raw)
	}
}

// TestAuthorizePost: the request may be POSTed as a form (OpenID Connect
// Core §3.1.2.1); the response then redirects with 303.
func TestAuthorizePost(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b, _ := loggedIn(t, f)
	p := b.post(PathAuthorize, codeRequest("state", "posted"), "Origin", "https://spa.example", "Sec-Fetch-Site", "cross-site")
	if v := p.result(t, false); p.status != http.StatusSeeOther || v.Get("code") == "" || v.Get("state") != "posted" {
		t.Fatalf("%d %v", p.status, p.location)
	}
}
