package integration

import (
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

func TestOAuth2PasswordAndRefresh(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := clientContext(t, g)
	cfg := demoAppConfig(t, g)

	tok, err := cfg.PasswordCredentialsToken(ctx, "demo", "demo")
	if err != nil {
		t.Fatalf("PasswordCredentialsToken: %v", err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("want an access and a refresh token, got access %t, refresh %t", tok.AccessToken != "", tok.RefreshToken != "")
	}
	if tok.Type() != "Bearer" {
		t.Errorf("token type = %q, want Bearer", tok.Type())
	}
	if tok.ExpiresIn != 3600 {
		t.Errorf("expires_in = %d, want 3600", tok.ExpiresIn)
	}
	if scope, _ := tok.Extra("scope").(string); !sameScopes(scope, demoScopes) {
		t.Errorf("scope = %q, want %q", scope, demoScopes)
	}

	// An expired token makes the TokenSource refresh.
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Minute)
	fresh, err := cfg.TokenSource(ctx, &expired).Token()
	if err != nil {
		t.Fatalf("refreshing through TokenSource: %v", err)
	}
	if fresh.AccessToken == "" || fresh.AccessToken == tok.AccessToken {
		t.Error("the refresh did not return a new access token")
	}
	if fresh.RefreshToken == "" || fresh.RefreshToken == tok.RefreshToken {
		t.Error("the refresh did not return a new refresh token (rotation)")
	}
	if !fresh.Valid() {
		t.Errorf("the refreshed token is not valid: expiry %v", fresh.Expiry)
	}
	if until := time.Until(fresh.Expiry); until < 3500*time.Second || until > 3600*time.Second {
		t.Errorf("the refreshed token expires in %v, want about an hour", until)
	}
}

func TestOAuth2ClientCredentials(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := clientContext(t, g)
	for _, tc := range []struct {
		name  string
		style oauth2.AuthStyle
	}{
		{"client_secret_basic", oauth2.AuthStyleInHeader},
		{"client_secret_post", oauth2.AuthStyleInParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &clientcredentials.Config{
				ClientID:     serviceClient,
				ClientSecret: serviceSecret,
				TokenURL:     g.TokenEndpoint(t),
				AuthStyle:    tc.style,
			}
			tok, err := cfg.Token(ctx)
			if err != nil {
				t.Fatalf("client credentials: %v", err)
			}
			if tok.AccessToken == "" {
				t.Fatal("no access token")
			}
			if tok.RefreshToken != "" {
				t.Error("client credentials returned a refresh token")
			}
			// clientcredentials leaves Token.ExpiresIn zero; the raw field is there.
			if expiresIn, _ := tok.Extra("expires_in").(float64); tok.Type() != "Bearer" || expiresIn != 3600 {
				t.Errorf("token_type %q, expires_in %v; want Bearer, 3600", tok.Type(), tok.Extra("expires_in"))
			}
			if scope, _ := tok.Extra("scope").(string); scope != serviceScope {
				t.Errorf("scope = %q, want %q", scope, serviceScope)
			}
			_, claims := decodeJWT(t, tok.AccessToken)
			if claims["sub"] != serviceClient || claims["client_id"] != serviceClient {
				t.Errorf("sub %v, client_id %v; want both %q", claims["sub"], claims["client_id"], serviceClient)
			}
		})
	}
}
