package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
)

// JWTs as a client sees them: decoded unverified, verified against the
// published key set, and tampered with for the negative cases.

// decodeJWT returns a compact JWT's header and claims, unverified.
func decodeJWT(t testing.TB, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %d parts", len(parts))
	}
	return decodeSegment(t, parts[0]), decodeSegment(t, parts[1])
}

func decodeSegment(t testing.TB, seg string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatalf("JWT segment: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("JWT segment: %v", err)
	}
	return m
}

func encodeSegment(t testing.TB, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// kidOf returns the kid of a JWT's header, unverified.
func kidOf(t testing.TB, token string) string {
	t.Helper()
	header, _ := decodeJWT(t, token)
	kid, _ := header["kid"].(string)
	return kid
}

// tamperClaims returns token with one claim changed and the signature
// kept.
func tamperClaims(t testing.TB, token, claim string, value any) string {
	t.Helper()
	parts := strings.Split(token, ".")
	_, claims := decodeJWT(t, token)
	claims[claim] = value
	parts[1] = encodeSegment(t, claims)
	return strings.Join(parts, ".")
}

// tamperHeader returns token with one header member changed and the
// signature kept.
func tamperHeader(t testing.TB, token, member, value string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	header, _ := decodeJWT(t, token)
	header[member] = value
	parts[0] = encodeSegment(t, header)
	return strings.Join(parts, ".")
}

// tamperSignature returns token with one byte of its signature flipped.
func tamperSignature(t testing.TB, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatalf("JWT signature: %v", err)
	}
	sig[len(sig)/2] ^= 0x01
	parts[2] = base64.RawURLEncoding.EncodeToString(sig)
	return strings.Join(parts, ".")
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
