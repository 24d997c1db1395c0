package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
)

// oidcContext makes go-oidc use g.Client.
func oidcContext(t testing.TB, g *Gatehouse) context.Context {
	return oidc.ClientContext(t.Context(), g.Client)
}

func TestOIDCIDToken(t *testing.T) {
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

// checkAccessToken verifies an access token's signature against keys and
// its RFC 9068 header and claims.
func checkAccessToken(t testing.TB, ctx context.Context, keys *oidc.RemoteKeySet, g *Gatehouse, token, sub, clientID string, scopes []string) {
	t.Helper()
	payload, err := keys.VerifySignature(ctx, token)
	if err != nil {
		t.Fatalf("verifying the access token's signature: %v", err)
	}
	header, _ := decodeJWT(t, token)
	if header["typ"] != "at+jwt" {
		t.Errorf("typ = %v, want at+jwt", header["typ"])
	}
	if header["alg"] != "RS256" {
		t.Errorf("alg = %v, want RS256", header["alg"])
	}
	if kid, _ := header["kid"].(string); kid == "" {
		t.Error("no kid")
	}

	var claims struct {
		Iss      string          `json:"iss"`
		Aud      json.RawMessage `json:"aud"`
		Sub      string          `json:"sub"`
		ClientID string          `json:"client_id"`
		Scope    json.RawMessage `json:"scope"`
		JTI      string          `json:"jti"`
		Exp      int64           `json:"exp"`
		Iat      int64           `json:"iat"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("access token claims: %v", err)
	}
	if claims.Iss != g.Issuer {
		t.Errorf("iss = %q, want %q", claims.Iss, g.Issuer)
	}
	var audOne string
	var audMany []string
	switch {
	case json.Unmarshal(claims.Aud, &audOne) == nil && audOne == apiAudience:
	case json.Unmarshal(claims.Aud, &audMany) == nil && len(audMany) == 1 && audMany[0] == apiAudience:
	default:
		t.Errorf("aud = %s, want %q", claims.Aud, apiAudience)
	}
	if claims.Sub != sub {
		t.Errorf("sub = %q, want %q", claims.Sub, sub)
	}
	if claims.ClientID != clientID {
		t.Errorf("client_id = %q, want %q", claims.ClientID, clientID)
	}
	var scope string
	if err := json.Unmarshal(claims.Scope, &scope); err != nil {
		t.Errorf("scope = %s, want a space-separated string (RFC 9068)", claims.Scope)
	} else if !sameScopes(scope, scopes) {
		t.Errorf("scope = %q, want %q", scope, scopes)
	}
	if claims.JTI == "" {
		t.Error("no jti")
	}
	if claims.Exp-claims.Iat != 3600 {
		t.Errorf("exp - iat = %d, want 3600", claims.Exp-claims.Iat)
	}
}
