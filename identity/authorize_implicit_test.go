package identity

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func halfHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// webRequest is an authorization request of the confidential client web.
func webRequest(responseType string, extra ...string) url.Values {
	v := form("response_type", responseType, "client_id", "web", "redirect_uri", webRedirect,
		"scope", "openid profile email", "state", "st-w", "nonce", "n-w")
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			v.Del(extra[i])
		} else {
			v.Set(extra[i], extra[i+1])
		}
	}
	return v
}

// consented is a browser logged in as demo that has allowed web the
// scopes of webRequest.
func consented(t *testing.T, f *fixture) *browser {
	t.Helper()
	b := newBrowser(t, f)
	p := b.consent(b.login(b.authorize(webRequest("code")), "demo", "demo-pw"), "allow")
	if p.result(t, false).Get("code") == "" {
		t.Fatalf("no code after consent: %d %v", p.status, p.location)
	}
	return b
}

// TestEveryResponseType: each response type returns what it names, in the
// fragment by default, with the ID token's nonce, at_hash and c_hash where
// OpenID Connect Core §3.2.2.10 and §3.3.2.11 require them.
func TestEveryResponseType(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := consented(t, f)
	for _, rt := range []string{"token", "id_token", "id_token token", "code id_token", "code token", "code id_token token"} {
		t.Run(rt, func(t *testing.T) {
			p := b.authorize(webRequest(rt))
			v := p.result(t, true)
			if p.location.RawQuery != "" || v.Get("state") != "st-w" || v.Get("iss") != testIssuer {
				t.Fatalf("%v", p.location)
			}
			parts := strings.Fields(rt)
			has := func(s string) bool {
				for _, p := range parts {
					if p == s {
						return true
					}
				}
				return false
			}
			if (v.Get("code") != "") != has("code") || (v.Get("access_token") != "") != has("token") ||
				(v.Get("id_token") != "") != has("id_token") || v.Has("refresh_token") {
				t.Fatalf("response %v", v)
			}
			if has("token") && (v.Get("token_type") != "Bearer" || v.Get("expires_in") != "3600") {
				t.Errorf("token_type %q, expires_in %q", v.Get("token_type"), v.Get("expires_in"))
			}
			if !has("id_token") {
				return
			}
			claims, _ := f.parseToken(v.Get("id_token"), "JWT")
			if claims["nonce"] != "n-w" || claims["aud"] != "web" || claims["sid"] == nil || claims["auth_time"] == nil {
				t.Errorf("claims %v", claims)
			}
			if got, want := claims["at_hash"], halfHash(v.Get("access_token")); has("token") && got != want {
				t.Errorf("at_hash %v, want %s", got, want)
			} else if !has("token") && got != nil {
				t.Errorf("at_hash %v without an access token", got)
			}
			if got, want := claims["c_hash"], halfHash(v.Get("code")); has("code") && got != want {
				t.Errorf("c_hash %v, want %s", got, want)
			} else if !has("code") && got != nil {
				t.Errorf("c_hash %v without a code", got)
			}
			if claims["name"] != "Demo User" || claims["email"] != "demo@example.com" {
				t.Errorf("profile and email claims %v", claims)
			}
		})
	}
	// A hybrid code is exchanged like any other; its ID token's nonce is
	// the request's.
	v := b.authorize(webRequest("code id_token")).result(t, true)
	res := f.exchange("", v.Get("code"), webRedirect, "", basic("web", "web-secret"))
	if res.status != 200 {
		t.Fatalf("hybrid exchange: %d %s", res.status, res.raw)
	}
	if claims, _ := f.parseToken(res.str("id_token"), "JWT"); claims["nonce"] != "n-w" {
		t.Errorf("exchanged ID token nonce %v", claims["nonce"])
	}
	// The implicit access token reaches userinfo with the scopes' claims.
	v = b.authorize(webRequest("token", "scope", "openid email")).result(t, true)
	req := httptest.NewRequest(http.MethodGet, testIssuer+PathUserinfo, nil)
	req.Header.Set("Authorization", "Bearer "+v.Get("access_token"))
	if info := f.do(req); info.status != 200 || info.str("email") != "demo@example.com" || info.str("name") != "" {
		t.Fatalf("userinfo: %d %s", info.status, info.raw)
	}
}

// TestFormPost: response_mode=form_post answers with a page that posts
// the response to the redirect URI by its one inline script.
func TestFormPost(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := consented(t, f)
	p := b.authorize(webRequest("code id_token", "response_mode", "form_post"))
	if p.status != http.StatusOK || p.location != nil {
		t.Fatalf("%d %v", p.status, p.location)
	}
	if !strings.Contains(p.body, `<form method="post" action="`+webRedirect+`">`) {
		t.Fatalf("form %s", p.body)
	}
	v := p.fields()
	if v.Get("code") == "" || v.Get("id_token") == "" || v.Get("state") != "st-w" || v.Get("iss") != testIssuer {
		t.Fatalf("fields %v", v)
	}
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'nonce-") || !strings.Contains(csp, "form-action https://web.example;") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	// Errors take the same way.
	p = b.authorize(webRequest("code", "response_mode", "form_post", "scope", "bogus"))
	if v := p.fields(); p.status != http.StatusOK || v.Get("error") != "invalid_scope" || v.Get("state") != "st-w" {
		t.Fatalf("form_post error: %d %v", p.status, v)
	}
}

// TestConsent: a client that requires consent shows the page once; the
// answer is remembered for the user, client and scopes; more scopes, or
// prompt=consent, ask again; deny is access_denied; prompt=none without
// consent is consent_required.
func TestConsent(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.login(b.authorize(webRequest("code", "scope", "openid profile")), "demo", "demo-pw")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Web &lt;App&gt;") || !strings.Contains(p.body, "Your profile") {
		t.Fatalf("consent page: %d %s", p.status, p.body)
	}
	if none := newBrowser(t, f); none != nil {
		// Another browser, logged in, asking with prompt=none.
		none.login(none.authorize(webRequest("code", "scope", "openid")), "demo", "demo-pw")
		if v := none.authorize(webRequest("code", "scope", "openid", "prompt", "none")).result(t, false); v.Get("error") != "consent_required" {
			t.Fatalf("prompt=none before consent: %v", v)
		}
	}
	if v := b.consent(p, "allow").result(t, false); v.Get("code") == "" {
		t.Fatalf("allow: %v", v)
	}
	if p := b.authorize(webRequest("code", "scope", "openid")); p.status != http.StatusFound {
		t.Fatalf("a scope allowed before asked again: %d", p.status)
	}
	if p := b.authorize(webRequest("code", "scope", "openid profile", "prompt", "none")); p.result(t, false).Get("code") == "" {
		t.Fatalf("prompt=none after consent: %v", p.location)
	}
	p = b.authorize(webRequest("code", "scope", "openid email"))
	if p.status != http.StatusOK || !strings.Contains(p.body, "e-mail") {
		t.Fatalf("a new scope did not ask: %d", p.status)
	}
	if v := b.consent(p, "deny").result(t, false); v.Get("error") != "access_denied" || v.Get("state") != "st-w" {
		t.Fatalf("deny: %v", v)
	}
	if p := b.authorize(webRequest("code", "scope", "openid", "prompt", "consent")); p.status != http.StatusOK {
		t.Fatalf("prompt=consent did not ask: %d", p.status)
	}
	c, err := browserStore(f.st).Consent(t.Context(), "sub-demo", "web")
	if err != nil || strings.Join(c.Scopes, " ") != "openid profile" {
		t.Fatalf("consent stored %+v %v", c, err)
	}
}

// TestConsentFormRefusals: the consent form refuses a post without the
// session's token, from another site, or from another session.
func TestConsentFormRefusals(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	page := b.login(b.authorize(webRequest("code")), "demo", "demo-pw")
	good := page.fields()
	good.Set("decision", "allow")
	other := newBrowser(t, f)
	otherPage := other.login(other.authorize(webRequest("code")), "demo", "demo-pw")
	for _, tc := range []struct {
		name    string
		by      *browser
		mutate  func(url.Values)
		headers []string
	}{
		{"token missing", b, func(v url.Values) { v.Del("csrf_token") }, nil},
		{"token of another session", b, func(v url.Values) { v.Set("csrf_token", otherPage.fields().Get("csrf_token")) }, nil},
		{"posted by another session", other, nil, nil},
		{"cross-site", b, nil, []string{"Origin", "https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			if tc.mutate != nil {
				tc.mutate(v)
			}
			p := tc.by.post(PathConsent, v, tc.headers...)
			if p.status != http.StatusForbidden || p.location != nil {
				t.Fatalf("%d %v %s", p.status, p.location, p.body)
			}
			if _, err := browserStore(f.st).Consent(t.Context(), "sub-demo", "web"); err == nil {
				t.Fatal("a refused consent form stored a consent")
			}
		})
	}
	if p := b.post(PathConsent, good); p.status != http.StatusSeeOther {
		t.Fatalf("the good form: %d %s", p.status, p.body)
	}
}
