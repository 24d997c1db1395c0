package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// authCodeConfig is demo-app as golang.org/x/oauth2 sees it for the code
// flow, returning to a loopback redirect URI on port (any port: RFC 8252
// §7.3).
func authCodeConfig(t testing.TB, g *Gatehouse, provider *oidc.Provider, port string) *oauth2.Config {
	cfg := demoAppConfig(t, g)
	cfg.Endpoint = provider.Endpoint()
	cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	cfg.RedirectURL = "http://127.0.0.1:" + port + "/callback"
	cfg.Scopes = []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess, "Service/Market"}
	return cfg
}

// TestAuthorizeCodeFlowGo: golang.org/x/oauth2's AuthCodeURL and Exchange
// with PKCE, through the login form, and coreos/go-oidc verifying the ID
// token (signature, iss, aud, exp, nonce, at_hash) and reading userinfo.
func TestAuthorizeCodeFlowGo(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := oidcContext(t, g)
	provider, err := oidc.NewProvider(ctx, g.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	cfg := authCodeConfig(t, g, provider, "53682")
	verifier := oauth2.GenerateVerifier()
	state, nonce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))

	b := newBrowser(t, g)
	p := b.login(b.get(authURL), "demo", "demo")
	if p.status != http.StatusSeeOther || p.location.Host != "127.0.0.1:53682" || p.location.Path != "/callback" {
		t.Fatalf("after the login: %d %v", p.status, p.location)
	}
	v := p.params(t, false)
	if v.Get("state") != state || v.Get("iss") != g.Issuer || v.Get("code") == "" {
		t.Fatalf("callback parameters: state ok %t, iss %q, code %t", v.Get("state") == state, v.Get("iss"), v.Get("code") != "")
	}

	tok, err := cfg.Exchange(clientContext(t, g), v.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.Type() != "Bearer" {
		t.Fatalf("token: access %t, refresh %t, type %q", tok.AccessToken != "", tok.RefreshToken != "", tok.Type())
	}
	rawID, _ := tok.Extra("id_token").(string)
	g.AddSecret(rawID)
	idToken, err := provider.Verifier(&oidc.Config{ClientID: publicClient}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("verifying the ID token: %v", err)
	}
	if idToken.Nonce != nonce || idToken.Subject != subjectOf(t, "demo") {
		t.Errorf("ID token nonce ok %t, sub %q", idToken.Nonce == nonce, idToken.Subject)
	}
	if err := idToken.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}
	var claims struct {
		AuthTime int64  `json:"auth_time"`
		SID      string `json:"sid"`
		Name     string `json:"name"`
	}
	if err := idToken.Claims(&claims); err != nil || claims.SID == "" || claims.Name != "Demo User" ||
		time.Since(time.Unix(claims.AuthTime, 0)) > time.Minute {
		t.Errorf("claims %+v %v", claims, err)
	}

	info, err := provider.UserInfo(ctx, cfg.TokenSource(clientContext(t, g), tok))
	if err != nil || info.Subject != idToken.Subject || info.Email != "demo@example.com" {
		t.Fatalf("userinfo: %+v %v", info, err)
	}
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Minute)
	if fresh, err := cfg.TokenSource(clientContext(t, g), &expired).Token(); err != nil || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh after the code flow: %v", err)
	}

	// The session answers the next authorization at once.
	again := b.get(cfg.AuthCodeURL("s2", oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce),
		oauth2.SetAuthURLParam("prompt", "none")))
	if again.status != http.StatusFound || again.params(t, false).Get("code") == "" {
		t.Fatalf("prompt=none with a session: %d %v", again.status, again.location)
	}
}

func halfHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// TestAuthorizeImplicitAndHybrid: demo-web's implicit and hybrid flows,
// in the fragment and as form_post, after the consent page; go-oidc
// verifies every ID token, its nonce, at_hash and c_hash; the hybrid code
// is exchanged with demo-web's secret.
func TestAuthorizeImplicitAndHybrid(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := oidcContext(t, g)
	provider, err := oidc.NewProvider(ctx, g.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: webClient})
	b := newBrowser(t, g)
	request := func(rt, mode, nonce string) string {
		v := url.Values{"client_id": {webClient}, "response_type": {rt}, "redirect_uri": {webCallback(g)},
			"scope": {"openid profile email"}, "state": {"st-" + nonce}, "nonce": {nonce}}
		if mode != "" {
			v.Set("response_mode", mode)
		}
		return g.Issuer + "/connect/authorize?" + v.Encode()
	}
	// The first time: login, then consent.
	p := b.login(b.get(request("id_token token", "", "n0")), "demo", "demo")
	if !strings.Contains(p.body, `action="/connect/consent"`) || !strings.Contains(p.body, "Demo Web") {
		t.Fatalf("no consent page: %d %v", p.status, p.location)
	}
	p = b.consent(p, "allow")

	for i, tc := range []struct{ rt, mode string }{
		{"id_token token", ""}, {"id_token", ""}, {"code id_token", ""}, {"code token", ""},
		{"code id_token token", ""}, {"code id_token", "form_post"}, {"id_token token", "form_post"},
	} {
		t.Run(tc.rt+" "+tc.mode, func(t *testing.T) {
			nonce := "n" + string(rune('1'+i))
			if i > 0 {
				p = b.get(request(tc.rt, tc.mode, nonce))
			} else {
				nonce = "n0"
			}
			var v url.Values
			if tc.mode == "form_post" {
				if p.status != http.StatusOK || !strings.Contains(p.body, `action="`+webCallback(g)+`"`) {
					t.Fatalf("form_post page: %d %.300s", p.status, p.body)
				}
				v = p.fields()
			} else {
				v = p.params(t, true)
			}
			if v.Get("state") != "st-"+nonce || v.Get("iss") != g.Issuer {
				t.Fatalf("state %q, iss %q", v.Get("state"), v.Get("iss"))
			}
			if !strings.Contains(tc.rt, "id_token") {
				if v.Get("access_token") == "" || v.Get("code") == "" || v.Has("id_token") {
					t.Fatalf("code token: %v", keys(v))
				}
				return
			}
			idt, err := verifier.Verify(ctx, v.Get("id_token"))
			if err != nil {
				t.Fatalf("verifying the ID token: %v", err)
			}
			if idt.Nonce != nonce {
				t.Errorf("nonce %q, want %q", idt.Nonce, nonce)
			}
			if at := v.Get("access_token"); at != "" {
				if err := idt.VerifyAccessToken(at); err != nil {
					t.Errorf("at_hash: %v", err)
				}
			}
			var c struct {
				CHash string `json:"c_hash"`
				Email string `json:"email"`
			}
			if err := idt.Claims(&c); err != nil {
				t.Fatal(err)
			}
			if code := v.Get("code"); code != "" && c.CHash != halfHash(code) {
				t.Errorf("c_hash %q, want %q", c.CHash, halfHash(code))
			}
			if c.Email != "demo@example.com" {
				t.Errorf("email claim %q", c.Email)
			}
			if code := v.Get("code"); code != "" {
				web := &oauth2.Config{ClientID: webClient, ClientSecret: webSecret, RedirectURL: webCallback(g),
					Endpoint: oauth2.Endpoint{TokenURL: g.TokenEndpoint(t), AuthStyle: oauth2.AuthStyleInHeader}}
				tok, err := web.Exchange(clientContext(t, g), code)
				if err != nil {
					t.Fatalf("exchanging the hybrid code: %v", err)
				}
				raw, _ := tok.Extra("id_token").(string)
				if exchanged, err := verifier.Verify(ctx, raw); err != nil || exchanged.Nonce != nonce {
					t.Fatalf("the exchanged ID token: %v", err)
				}
			}
		})
	}
}

func keys(v url.Values) []string {
	var out []string
	for k := range v {
		out = append(out, k)
	}
	return out
}
