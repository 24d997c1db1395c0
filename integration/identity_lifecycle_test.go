package integration

import (
	"crypto/rand"
	"net/http"
	"slices"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2/clientcredentials"
)

// TestRestartKeepsKeysAndRefreshTokens stops the process between issuing
// and using tokens: the signing key and refresh tokens live in the store.
func TestRestartKeepsKeysAndRefreshTokens(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestRefreshReplayRevokesFamily replays a rotated refresh token after its
// successor was used: the whole family is revoked.
func TestRefreshReplayRevokesFamily(t *testing.T) {
	t.Parallel()
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
