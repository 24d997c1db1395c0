package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// Hostile inputs to the browser flows, each refused with the right error
// and no state change (the good request still works after it).

// codeURL is an authorization request of demo-app for a code with PKCE
// (verifier's S256 challenge), with params changed (an empty value
// removes one).
func codeURL(g *Gatehouse, verifier string, params ...string) string {
	v := url.Values{"client_id": {publicClient}, "response_type": {"code"}, "redirect_uri": {"http://127.0.0.1:40000/callback"},
		"scope": {"openid offline_access Service/Market"}, "state": {"hostile-state"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i+1] == "" {
			v.Del(params[i])
		} else {
			v.Set(params[i], params[i+1])
		}
	}
	return g.Issuer + "/connect/authorize?" + v.Encode()
}

// exchangeCode redeems a code for demo-app (or, with a secret, another
// client) and returns the status and the decoded body.
func exchangeCode(t *testing.T, g *Gatehouse, client, secret, code, redirectURI, verifier string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if verifier != "" {
		form.Set("code_verifier", verifier)
	}
	basicUser := client
	if secret == "" { // a public client sends its id alone
		form.Set("client_id", client)
		basicUser = ""
	}
	resp, body := g.PostForm(t, "token_endpoint", form, basicUser, secret)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("token endpoint: %d %s", resp.StatusCode, body)
	}
	return resp.StatusCode, out
}

func TestAuthorizeHostileRedirectURIs(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	verifier := oauth2.GenerateVerifier()
	for name, uri := range map[string]string{
		"not registered":          "https://evil.example/callback",
		"prefix":                  g.Issuer + "/callbac",
		"suffix":                  g.Issuer + "/callback/evil",
		"case":                    strings.ToUpper(g.Issuer[:4]) + g.Issuer[4:] + "/callback",
		"path case":               g.Issuer + "/Callback",
		"userinfo":                "http://evil@" + strings.TrimPrefix(g.Issuer, "http://") + "/callback",
		"userinfo before host":    "http://localhost@evil.example/callback",
		"fragment":                g.Issuer + "/callback#x",
		"query":                   g.Issuer + "/callback?x=1",
		"localhost port changed":  "http://localhost:1/callback",
		"loopback path suffix":    "http://127.0.0.1:40000/callback/x",
		"loopback userinfo":       "http://a@127.0.0.1:40000/callback",
		"loopback lookalike host": "http://127.0.0.1.evil.example/callback",
	} {
		t.Run(name, func(t *testing.T) {
			b := newBrowser(t, g)
			p := b.get(codeURL(g, verifier, "redirect_uri", uri))
			if p.status != http.StatusBadRequest || p.location != nil || strings.Contains(p.body, `name="password"`) {
				t.Fatalf("%d %v %.200s", p.status, p.location, p.body)
			}
			if !strings.Contains(p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("CSP %q", p.header.Get("Content-Security-Policy"))
			}
		})
	}
	// An unknown client: the same page.
	if p := newBrowser(t, g).get(codeURL(g, verifier, "client_id", "nobody")); p.status != http.StatusBadRequest || p.location != nil {
		t.Fatalf("unknown client: %d %v", p.status, p.location)
	}
	// The loopback IP literal on any port, and the registered URIs, work.
	for _, uri := range []string{"http://127.0.0.1:40001/callback", g.Issuer + "/callback"} {
		if p := newBrowser(t, g).get(codeURL(g, verifier, "redirect_uri", uri)); p.status != http.StatusOK {
			t.Errorf("%s: %d %v", uri, p.status, p.location)
		}
	}
}

func TestAuthorizeHostileRequests(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	verifier := oauth2.GenerateVerifier()
	b := newBrowser(t, g)
	// demo-app may not use the implicit flow: unauthorized_client, back
	// to the client in the fragment.
	p := b.get(codeURL(g, verifier, "response_type", "id_token token", "nonce", "n"))
	if v := p.params(t, true); v.Get("error") != "unauthorized_client" || v.Get("state") != "hostile-state" {
		t.Fatalf("implicit for demo-app: %v", v)
	}
	// A public client without PKCE, or with plain.
	for _, params := range [][]string{{"code_challenge", "", "code_challenge_method", ""}, {"code_challenge_method", "plain"}} {
		if v := b.get(codeURL(g, verifier, params...)).params(t, false); v.Get("error") != "invalid_request" {
			t.Errorf("%v: %v", params, v)
		}
	}
	if b.hasSession() {
		t.Error("a refused request started a session")
	}
}

// TestAuthorizeHostileExchanges: a wrong or missing verifier, another
// client, and the code then still good once; used twice, it revokes what
// it issued.
func TestAuthorizeHostileExchanges(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	verifier := oauth2.GenerateVerifier()
	redirect := "http://127.0.0.1:40000/callback"
	b := newBrowser(t, g)
	code := b.login(b.get(codeURL(g, verifier)), "demo", "demo").params(t, false).Get("code")
	for name, try := range map[string]func() (int, map[string]any){
		"wrong verifier": func() (int, map[string]any) {
			return exchangeCode(t, g, publicClient, "", code, redirect, oauth2.GenerateVerifier())
		},
		"missing verifier": func() (int, map[string]any) { return exchangeCode(t, g, publicClient, "", code, redirect, "") },
		"another redirect": func() (int, map[string]any) {
			return exchangeCode(t, g, publicClient, "", code, "http://127.0.0.1:40001/callback", verifier)
		},
		"another client": func() (int, map[string]any) {
			return exchangeCode(t, g, webClient, webSecret, code, redirect, verifier)
		},
	} {
		if status, body := try(); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Errorf("%s: %d %v", name, status, body)
		}
	}
	status, first := exchangeCode(t, g, publicClient, "", code, redirect, verifier)
	if status != http.StatusOK {
		t.Fatalf("the good exchange after the refusals: %d %v", status, first)
	}
	at, _ := first["access_token"].(string)
	rt, _ := first["refresh_token"].(string)
	if at == "" || rt == "" {
		t.Fatalf("the good exchange: access %t, refresh %t", at != "", rt != "")
	}
	if resp, body := g.Do(t, bearer(t, g, at)); resp.StatusCode != http.StatusOK {
		t.Fatalf("userinfo before the replay: %d %s", resp.StatusCode, body)
	}
	if status, body := exchangeCode(t, g, publicClient, "", code, redirect, verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("the code used twice: %d %v", status, body)
	}
	if resp, _ := g.Do(t, bearer(t, g, at)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("userinfo with the replayed code's access token: %d, want 401", resp.StatusCode)
	}
	resp, body := g.PostForm(t, "token_endpoint", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt},
		"client_id": {publicClient}}, "", "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid_grant") {
		t.Errorf("refresh with the replayed code's refresh token: %d %s", resp.StatusCode, body)
	}
}

func bearer(t *testing.T, g *Gatehouse, token string) *http.Request {
	req := mustRequest(t, http.MethodGet, g.endpoint(t, "userinfo_endpoint"), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// TestAuthorizeExpiredCode: with code_lifetime 1s, a code a second old is
// refused.
func TestAuthorizeExpiredCode(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: demoVariant(t, "code-lifetime",
		configEdit{anchor: anchorGatehouse, insert: "\t\tcode_lifetime 1s\n"})})
	verifier := oauth2.GenerateVerifier()
	b := newBrowser(t, g)
	code := b.login(b.get(codeURL(g, verifier)), "demo", "demo").params(t, false).Get("code")
	time.Sleep(1100 * time.Millisecond)
	if status, body := exchangeCode(t, g, publicClient, "", code, "http://127.0.0.1:40000/callback", verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("an expired code: %d %v", status, body)
	}
}

// TestAuthorizeHostileLoginForms: the login form without its anti-forgery
// token, with another browser's, or posted from another site is refused
// before the password is looked at: no session, and the form still works.
func TestAuthorizeHostileLoginForms(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	verifier := oauth2.GenerateVerifier()
	victim, attacker := newBrowser(t, g), newBrowser(t, g)
	form := victim.loginForm(victim.get(codeURL(g, verifier)), "demo", "demo")
	foreign := attacker.loginForm(attacker.get(codeURL(g, verifier)), "demo", "demo")
	for _, tc := range []struct {
		name    string
		edit    func(url.Values)
		headers []string
	}{
		{"token missing", func(v url.Values) { v.Del("csrf_token") }, nil},
		{"token of another session", func(v url.Values) { v.Set("csrf_token", foreign.Get("csrf_token")) }, nil},
		{"another browser's whole form", func(v url.Values) {
			for k := range v {
				v.Set(k, foreign.Get(k))
			}
			v.Set("username", "demo")
			v.Set("password", "demo")
		}, nil},
		{"posted cross-site (Origin)", nil, []string{"Origin", "http://evil.example", "Sec-Fetch-Site", ""}},
		{"posted cross-site (Fetch Metadata)", nil, []string{"Origin", "", "Sec-Fetch-Site", "cross-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{}
			for k := range form {
				v.Set(k, form.Get(k))
			}
			if tc.edit != nil {
				tc.edit(v)
			}
			p := victim.post("/connect/login", v, tc.headers...)
			if p.status != http.StatusForbidden || p.location != nil {
				t.Fatalf("%d %v %.300s", p.status, p.location, p.body)
			}
			if victim.hasSession() {
				t.Fatal("a refused login form started a session")
			}
		})
	}
	if p := victim.post("/connect/login", form); p.status != http.StatusSeeOther || !victim.hasSession() {
		t.Fatalf("the victim's own form: %d %.300s", p.status, p.body)
	}
}
