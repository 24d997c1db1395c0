package identity

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// TestCodeFlow: the code flow with PKCE through the login form, the
// exchange, the ID token's claims, and a second authorization that the
// session answers without a login.
func TestCodeFlow(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.authorize(codeRequest("redirect_uri", "http://127.0.0.1:51000/cb"))
	if p.status != http.StatusOK || !strings.Contains(p.body, "Single Page") {
		t.Fatalf("login page: %d %s", p.status, p.body)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") ||
		!strings.Contains(csp, "form-action 'self' http://127.0.0.1:51000") {
		t.Errorf("login page CSP %q", csp)
	}
	res := b.login(p, "demo", "demo-pw")
	if res.status != http.StatusSeeOther || res.location.Host != "127.0.0.1:51000" || res.location.Path != "/cb" {
		t.Fatalf("after login: %d %v", res.status, res.location)
	}
	v := res.result(t, false)
	if v.Get("state") != "st-1" || v.Get("iss") != testIssuer || v.Get("code") == "" || v.Has("access_token") {
		t.Fatalf("response %v", v)
	}
	tok := f.exchange("spa", v.Get("code"), "http://127.0.0.1:51000/cb", verifier)
	if tok.status != 200 || tok.str("access_token") == "" || tok.str("refresh_token") == "" || tok.str("id_token") == "" {
		t.Fatalf("exchange: %d %s", tok.status, tok.raw)
	}
	claims, _ := f.parseToken(tok.str("id_token"), "JWT")
	if claims["sub"] != "sub-demo" || claims["aud"] != "spa" || claims["nonce"] != "n-1" || claims["sid"] == nil ||
		claims["auth_time"] == nil || claims["at_hash"] == nil || claims["name"] != "Demo User" || claims["email"] != nil {
		t.Errorf("ID token claims %v", claims)
	}
	if tok.str("scope") != "openid profile offline_access" {
		t.Errorf("scope %q", tok.str("scope"))
	}

	// The session answers the next request at once, even with prompt=none.
	again := b.authorize(codeRequest("prompt", "none", "state", "st-2"))
	if v := again.result(t, false); again.status != http.StatusFound || v.Get("code") == "" || v.Get("state") != "st-2" {
		t.Fatalf("second authorization: %d %v", again.status, v)
	}
	// A new browser with prompt=none gets login_required, no page.
	other := newBrowser(t, f).authorize(codeRequest("prompt", "none"))
	if v := other.result(t, false); v.Get("error") != "login_required" || v.Get("state") != "st-1" {
		t.Fatalf("prompt=none without a session: %v", v)
	}
}

// TestCodeExchangeRefusals: every hostile exchange is refused with
// invalid_grant and changes nothing: the code still works afterwards.
func TestCodeExchangeRefusals(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	_, code := loggedIn(t, f)
	for _, tc := range []struct {
		name                    string
		client, code, uri, veri string
		mods                    []func(*http.Request)
		wantErr                 string
		wantStatus              int
	}{
		{"wrong verifier", "spa", code, spaRedirect, strings.Repeat("a", 43), nil, "invalid_grant", 400},
		{"verifier missing", "spa", code, spaRedirect, "", nil, "invalid_grant", 400},
		{"challenge sent as verifier", "spa", code, spaRedirect, tokens.S256Challenge(verifier), nil, "invalid_grant", 400},
		{"redirect_uri missing", "spa", code, "", verifier, nil, "invalid_grant", 400},
		{"redirect_uri differs", "spa", code, "https://spa.example/cb?tenant=a", verifier, nil, "invalid_grant", 400},
		{"another client", "plain", code, spaRedirect, verifier, nil, "invalid_grant", 400},
		{"unknown code", "spa", code + "x", spaRedirect, verifier, nil, "invalid_grant", 400},
		{"confidential client without secret", "web", code, spaRedirect, verifier, nil, "invalid_client", 400},
		{"client not allowed the grant", "app", code, spaRedirect, verifier, nil, "unauthorized_client", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.exchange(tc.client, tc.code, tc.uri, tc.veri, tc.mods...)
			if res.status != tc.wantStatus || res.str("error") != tc.wantErr {
				t.Fatalf("%d %s", res.status, res.raw)
			}
		})
	}
	c, err := browserStore(f.st).Code(t.Context(), tokens.HashToken(code))
	if err != nil || !c.UsedAt.IsZero() || !c.ReplayedAt.IsZero() {
		t.Fatalf("a refused exchange changed the code: %+v %v", c, err)
	}
	if res := f.exchange("spa", code, spaRedirect, verifier); res.status != 200 {
		t.Fatalf("the code no longer works after the refusals: %d %s", res.status, res.raw)
	}
}

// TestCodeReplayRevokes: a code used twice is refused, and the tokens of
// its first use are revoked: the refresh family and the access token.
func TestCodeReplayRevokes(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	_, code := loggedIn(t, f)
	first := f.exchange("spa", code, spaRedirect, verifier)
	if first.status != 200 {
		t.Fatalf("first exchange: %d %s", first.status, first.raw)
	}
	if id, err := f.srv.Verifier().Verify(t.Context(), first.str("access_token")); err != nil || id.Subject != "sub-demo" {
		t.Fatalf("the access token does not verify before the replay: %v", err)
	}
	second := f.exchange("spa", code, spaRedirect, verifier)
	if second.status != 400 || second.str("error") != "invalid_grant" {
		t.Fatalf("second exchange: %d %s", second.status, second.raw)
	}
	if _, err := f.srv.Verifier().Verify(t.Context(), first.str("access_token")); err == nil {
		t.Error("the first use's access token still verifies after the replay")
	}
	if res := f.refresh("spa", first.str("refresh_token")); res.status != 400 || res.str("error") != "invalid_grant" {
		t.Errorf("the first use's refresh token still refreshes: %d %s", res.status, res.raw)
	}
}

// TestCodeExpiry: a code lives 60 seconds by default.
func TestCodeExpiry(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	_, code := loggedIn(t, f)
	f.clock.Add(tokens.DefaultCodeLifetime)
	if res := f.exchange("spa", code, spaRedirect, verifier); res.status != 400 || res.str("error") != "invalid_grant" {
		t.Fatalf("expired code: %d %s", res.status, res.raw)
	}
	c, err := browserStore(f.st).Code(t.Context(), tokens.HashToken(code))
	if err != nil || !c.UsedAt.IsZero() {
		t.Fatalf("an expired code was used: %+v %v", c, err)
	}
	_, code = loggedIn(t, f)
	f.clock.Add(tokens.DefaultCodeLifetime - time.Second)
	if res := f.exchange("spa", code, spaRedirect, verifier); res.status != 200 {
		t.Fatalf("a code a second before its expiry: %d %s", res.status, res.raw)
	}
}

// TestCodeWithoutChallenge: a confidential client may leave PKCE out; a
// verifier sent for such a code is refused (no PKCE downgrade).
func TestCodeWithoutChallenge(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.login(b.authorize(form("response_type", "code", "client_id", "web", "redirect_uri", webRedirect,
		"scope", "openid", "state", "s")), "demo", "demo-pw")
	p = b.consent(p, "allow")
	code := p.result(t, false).Get("code")
	if code == "" {
		t.Fatalf("no code: %d %v", p.status, p.location)
	}
	withSecret := basic("web", "web-secret")
	if res := f.exchange("", code, webRedirect, verifier, withSecret); res.str("error") != "invalid_grant" {
		t.Fatalf("a verifier without a challenge: %d %s", res.status, res.raw)
	}
	if res := f.exchange("", code, webRedirect, "", withSecret); res.status != 200 {
		t.Fatalf("exchange: %d %s", res.status, res.raw)
	}
}

// TestCodeUserDisabled: a code of a user disabled since is refused.
func TestCodeUserDisabled(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	_, code := loggedIn(t, f)
	u, err := f.st.User(t.Context(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	u.Disabled = true
	if err := f.st.UpdateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if res := f.exchange("spa", code, spaRedirect, verifier); res.str("error") != "invalid_grant" {
		t.Fatalf("%d %s", res.status, res.raw)
	}
}

// TestBrowserFlowsNeedTheirStore: a store without the browser roles leaves
// the authorization endpoint answering 501, and the code grant unsupported.
func TestBrowserFlowsNeedTheirStore(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	srv, err := NewServer(t.Context(), f.cfg, plainStore{f.st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.srv = srv
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		res := f.do(httptest.NewRequest(method, testIssuer+PathAuthorize+"?"+codeRequest().Encode(), nil))
		if res.status != http.StatusNotImplemented || res.str("error") == "" {
			t.Errorf("%s: %d %s", method, res.status, res.raw)
		}
	}
	if res := f.exchange("spa", "code", spaRedirect, verifier); res.str("error") != "unsupported_grant_type" {
		t.Errorf("code grant: %d %s", res.status, res.raw)
	}
	if srv.Endpoint(PathLogin) != nil || srv.Endpoint(PathConsent) != nil {
		t.Error("the forms are served without a browser store")
	}
}

// plainStore hides every method but store.Store's.
type plainStore struct{ store.Store }

// Codes redeemed in a loop (a signed-in user's prompt=none) start a
// refresh family each, within the per-user bound: the oldest refresh
// tokens stop working, the newest MaxPerUser work.
func TestCodeGrantsBounded(t *testing.T) {
	f := newFixture(t, withBrowserClients, func(c *Config) { c.Refresh.MaxPerUser = 2 })
	b, code := loggedIn(t, f)
	var rts []string
	for i := range 4 {
		if i > 0 {
			p := b.authorize(codeRequest("prompt", "none"))
			code = p.result(t, false).Get("code")
		}
		tok := f.exchange("spa", code, spaRedirect, verifier)
		if tok.status != 200 || tok.str("refresh_token") == "" {
			t.Fatalf("exchange %d: %d %s", i, tok.status, tok.str("error"))
		}
		rts = append(rts, tok.str("refresh_token"))
		f.clock.Add(time.Second)
	}
	for i, rt := range rts {
		if res := f.refresh("spa", rt); (i >= 2) != (res.status == 200) {
			t.Errorf("refresh token %d of 4 with at most 2: %d %s", i, res.status, res.str("error"))
		}
	}
}
