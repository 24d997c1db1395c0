package identity

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// Every other token the server mints, signed with the same key, is refused
// where an access token is expected: as the bearer token of userinfo, and
// at introspection (inactive, whatever the hint). The hostile table makes
// such tokens by hand; these are the server's own.
func TestAttackTokensOtherTokenTypes(t *testing.T) {
	f := newFixture(t)
	login := f.login("demo", "demo-pw", "scope", "openid profile email offline_access Service/Market")
	at, rt, idt := login.str("access_token"), login.str("refresh_token"), login.str("id_token")
	if at == "" || rt == "" || idt == "" {
		t.Fatalf("login: %s", login.raw)
	}
	logoutTok, _, err := f.srv.tokens.LogoutToken("app", "sub-demo", "sid-1")
	if err != nil {
		t.Fatal(err)
	}
	if res := f.userinfo("GET", at); res.status != 200 {
		t.Fatalf("the access token itself: %d %s", res.status, res.raw)
	}
	svc := basic("svc", "svc-secret")
	for name, tok := range map[string]string{"id token": idt, "logout token": logoutTok, "refresh token": rt} {
		t.Run(name, func(t *testing.T) {
			if res := f.userinfo("GET", tok); res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("userinfo: %d %s", res.status, res.raw)
			}
			for _, hint := range []string{"access_token", "refresh_token", ""} {
				if res := f.introspect(tok, svc, "token_type_hint", hint); res.status != 200 || res.body["active"] != false {
					t.Errorf("introspection (hint %q) by another client: %d %s", hint, res.status, res.raw)
				}
			}
		})
	}
}

// An ID token's aud is its client's id, an access token's the configured
// audience: with explicit typing, the second of the two rules that keep an
// ID token from passing as an access token (RFC 8725 §3.11, §3.12). A
// client registered under the audience's name gets ID tokens (and logout
// tokens) whose aud is the access tokens' audience, so the typ check
// stands alone, and a verifier that accepts "JWT" (VerifierConfig.Types)
// takes that client's ID tokens, scope-less, as access tokens for the
// user. The configuration must be refused, as a resource named like a
// client is.
func TestAttackTokensClientNamedLikeAudience(t *testing.T) {
	cfg := testConfig(time.Now)
	cfg.Audience = "market-api"
	cfg.Clients = append(cfg.Clients, clients.Config{ID: "market-api", Public: true,
		GrantTypes: []string{oauth.GrantPassword}, Scopes: []string{"openid"}})
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := NewServer(t.Context(), cfg, st)
	if err == nil {
		srv.Close()
		t.Fatal("a client named like the access-token audience was accepted: its ID tokens carry the access tokens' aud")
	}
}
