package integration

import (
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
)

func TestOIDCIDToken(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := oidcContext(t, g)

	provider, err := oidc.NewProvider(ctx, g.Issuer)
	if err != nil {
		t.Fatalf("discovery through go-oidc: %v", err)
	}
	if got := provider.Endpoint().TokenURL; got != g.Issuer+"/connect/token" {
		t.Errorf("token URL = %q", got)
	}

	tok := g.PasswordGrant(t, "demo", "demo")
	if tok.IDToken == "" {
		t.Fatal("the password grant with openid returned no id_token")
	}
	idToken, err := provider.Verifier(&oidc.Config{ClientID: publicClient}).Verify(ctx, tok.IDToken)
	if err != nil {
		t.Fatalf("verifying the id_token: %v", err)
	}
	if idToken.Subject != subjectOf(t, "demo") {
		t.Errorf("id_token sub = %q, want demo's subject", idToken.Subject)
	}
	if idToken.Issuer != g.Issuer {
		t.Errorf("id_token iss = %q, want %q", idToken.Issuer, g.Issuer)
	}
	if err := idToken.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}
	var claims struct {
		PreferredUsername string `json:"preferred_username"`
		Email             string `json:"email"`
	}
	if err := idToken.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if claims.PreferredUsername != "demo" {
		t.Errorf("preferred_username = %q, want demo", claims.PreferredUsername)
	}

	// Another audience must not accept it.
	if _, err := provider.Verifier(&oidc.Config{ClientID: serviceClient}).Verify(ctx, tok.IDToken); err == nil {
		t.Error("the id_token verified for another client id")
	}
}

func TestAccessTokenSignatureAndClaims(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	ctx := oidcContext(t, g)
	keys := oidc.NewRemoteKeySet(ctx, g.JWKSURI(t))

	tok := g.PasswordGrant(t, "demo", "demo")
	if tok.TokenType != "Bearer" {
		t.Errorf("token_type = %q, want Bearer", tok.TokenType)
	}
	checkAccessToken(t, ctx, keys, g, tok.AccessToken, subjectOf(t, "demo"), publicClient, demoScopes)

	// Tampering with the payload breaks the signature.
	parts := strings.Split(tok.AccessToken, ".")
	parts[1] = parts[1][:len(parts[1])-2] + "xx"
	if _, err := keys.VerifySignature(ctx, strings.Join(parts, ".")); err == nil {
		t.Error("a tampered access token verified")
	}
}
