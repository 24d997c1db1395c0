package integration

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2/clientcredentials"
)

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

func kidOf(t testing.TB, token string) string {
	t.Helper()
	header, _ := decodeJWT(t, token)
	kid, _ := header["kid"].(string)
	return kid
}

// TestRestartKeepsKeysAndRefreshTokens stops the process between issuing
// and using tokens: the signing key and refresh tokens live in the store.
func TestRestartKeepsKeysAndRefreshTokens(t *testing.T) {
	g := StartGatehouse(t)
	before := g.PasswordGrant(t, "demo", "demo")
	kid := kidOf(t, before.AccessToken)

	g.Restart()

	ctx := oidcContext(t, g)
	if kids := jwksKids(t, g); !slices.Contains(kids, kid) {
		t.Fatalf("after a restart the JWKS has kids %q, not the old %q", kids, kid)
	}
	keys := oidc.NewRemoteKeySet(ctx, g.JWKSURI(t))
	checkAccessToken(t, ctx, keys, g, before.AccessToken, subjectOf(t, "demo"), publicClient, demoScopes)

	after := g.Refresh(t, before.RefreshToken)
	if after.RefreshToken == "" || after.RefreshToken == before.RefreshToken {
		t.Error("the refresh after a restart did not rotate the refresh token")
	}
	if got := kidOf(t, after.AccessToken); got != kid {
		t.Errorf("after a restart tokens are signed with kid %q, want the same %q", got, kid)
	}
	checkAccessToken(t, ctx, keys, g, after.AccessToken, subjectOf(t, "demo"), publicClient, demoScopes)
}

// TestReloadAddsClient reloads a config with one more client through the
// admin endpoint while the server runs.
func TestReloadAddsClient(t *testing.T) {
	g := StartGatehouse(t)
	const newClient = "integration-reload"
	secret := rand.Text() + rand.Text()
	g.AddSecret(secret, basicCredentials(newClient, secret))
	config := configWithClient(t, newClient, secret)

	before := g.PasswordGrant(t, "demo", "demo")
	cc := &clientcredentials.Config{ClientID: newClient, ClientSecret: secret, TokenURL: g.TokenEndpoint(t)}
	if _, err := cc.Token(clientContext(t, g)); err == nil {
		t.Fatal("the new client got a token before the reload")
	}

	g.Reload(config)

	ctx := oidcContext(t, g)
	keys := oidc.NewRemoteKeySet(ctx, g.JWKSURI(t))
	t.Run("old access token verifies", func(t *testing.T) {
		checkAccessToken(t, ctx, keys, g, before.AccessToken, subjectOf(t, "demo"), publicClient, demoScopes)
	})
	t.Run("old refresh token refreshes", func(t *testing.T) {
		after := g.Refresh(t, before.RefreshToken)
		if after.RefreshToken == "" || after.RefreshToken == before.RefreshToken {
			t.Error("the refresh after a reload did not rotate the refresh token")
		}
		checkAccessToken(t, ctx, keys, g, after.AccessToken, subjectOf(t, "demo"), publicClient, demoScopes)
	})
	t.Run("new client works", func(t *testing.T) {
		tok, err := cc.Token(clientContext(t, g))
		if err != nil {
			t.Fatalf("client credentials for the added client: %v", err)
		}
		checkAccessToken(t, ctx, keys, g, tok.AccessToken, newClient, newClient, []string{"Service/News"})
	})
	t.Run("demo clients still work", func(t *testing.T) {
		g.PasswordGrant(t, "trader", "trader")
		cc := &clientcredentials.Config{ClientID: serviceClient, ClientSecret: serviceSecret, TokenURL: g.TokenEndpoint(t)}
		if _, err := cc.Token(clientContext(t, g)); err != nil {
			t.Errorf("demo-service after the reload: %v", err)
		}
	})
}

// configWithClient writes a copy of Caddyfile.example with one more
// confidential client (client_credentials for Service/News).
func configWithClient(t testing.TB, clientID, secret string) string {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(repoRoot, "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "client demo-service {"
	if !strings.Contains(string(orig), anchor) {
		t.Fatalf("Caddyfile.example has no %q to add a client next to", anchor)
	}
	sum := sha256.Sum256([]byte(secret))
	block := fmt.Sprintf("client %s {\n\t\t\tsecret_sha256 %s\n\t\t\tgrant_types client_credentials\n\t\t\tscopes Service/News\n\t\t}\n\n\t\t",
		clientID, hex.EncodeToString(sum[:]))
	config := strings.Replace(string(orig), anchor, block+anchor, 1)
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRefreshReplayRevokesFamily replays a rotated refresh token after its
// successor was used: the whole family is revoked.
func TestRefreshReplayRevokesFamily(t *testing.T) {
	g := StartGatehouse(t)
	r0 := g.PasswordGrant(t, "demo", "demo")
	r1 := g.Refresh(t, r0.RefreshToken)
	r2 := g.Refresh(t, r1.RefreshToken) // r1 used: r0 is now spent for good

	for _, tc := range []struct{ name, token string }{
		{"replayed ancestor", r0.RefreshToken},
		{"latest of a revoked family", r2.RefreshToken},
		{"unknown token", "not-a-refresh-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := g.RefreshGrant(t, tc.token)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400; body %s", resp.StatusCode, body)
			}
			if e := decodeError(t, resp, body); e.Error != "invalid_grant" {
				t.Errorf("error = %q, want invalid_grant", e.Error)
			}
		})
	}
}
