package identity

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

func TestIssuerValidation(t *testing.T) {
	for _, iss := range []string{"", "localhost:8080", "http://x/", "ftp://x", "http://x?a=b", "http://u@x", "http://x?"} {
		cfg := Config{Issuer: iss}
		if err := cfg.Validate(); err == nil {
			t.Errorf("issuer %q accepted", iss)
		}
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
func TestClientNamedLikeAudienceRefused(t *testing.T) {
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
