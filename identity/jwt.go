package identity

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// Token types for the JWT "typ" header.
const (
	TypeAccessToken = "at+jwt" // RFC 9068 §2.1
	typeIDToken     = "JWT"
)

// accessClaims are an access token's claims (RFC 9068 §2.2) plus the
// profile claims its scopes grant.
type accessClaims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  string `json:"aud"`
	Expiry    int64  `json:"exp"`
	IssuedAt  int64  `json:"iat"`
	NotBefore int64  `json:"nbf"`
	ID        string `json:"jti"`
	ClientID  string `json:"client_id"`
	Scope     string `json:"scope,omitempty"`
	AuthTime  int64  `json:"auth_time,omitempty"`
	profileClaims
}

// idClaims are an ID token's claims (OpenID Connect Core §2).
type idClaims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
	AuthTime int64  `json:"auth_time,omitempty"`
	AtHash   string `json:"at_hash,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
	profileClaims
}

// profileClaims are the user claims that scopes grant (OpenID Connect
// Core §5.4).
type profileClaims struct {
	Name              string   `json:"name,omitempty"`
	PreferredUsername string   `json:"preferred_username,omitempty"`
	UpdatedAt         int64    `json:"updated_at,omitempty"`
	Email             string   `json:"email,omitempty"`
	EmailVerified     *bool    `json:"email_verified,omitempty"`
	Role              []string `json:"role,omitempty"`
}

// userClaims returns the claims of u that scopes grant.
func userClaims(u *store.User, scopes []string) profileClaims {
	var p profileClaims
	if u == nil {
		return p
	}
	for _, s := range scopes {
		switch s {
		case ScopeProfile:
			p.Name = u.DisplayName
			p.PreferredUsername = u.Username
			if !u.Updated.IsZero() {
				p.UpdatedAt = u.Updated.Unix()
			}
		case ScopeEmail:
			if u.Email != "" {
				p.Email = u.Email
				v := u.EmailVerified
				p.EmailVerified = &v
			}
		case ScopeRoles:
			p.Role = u.Roles
		}
	}
	return p
}

// signJWT signs claims with k as a compact JWS with RS256.
func signJWT(k *signingKey, typ string, claims any) (string, error) {
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{"RS256", k.id, typ})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding claims: %w", err)
	}
	b64 := base64.RawURLEncoding
	var sb strings.Builder
	sb.Grow(b64.EncodedLen(len(header)) + b64.EncodedLen(len(payload)) + 2 + b64.EncodedLen(k.private.Size()))
	sb.WriteString(b64.EncodeToString(header))
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(payload))
	digest := sha256.Sum256([]byte(sb.String()))
	sig, err := rsa.SignPKCS1v15(nil, k.private, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	sb.WriteByte('.')
	sb.WriteString(b64.EncodeToString(sig))
	return sb.String(), nil
}

// atHash is the at_hash of an access token for RS256 (OpenID Connect Core
// §3.1.3.6): the left half of its SHA-256, base64url.
func atHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// randomID returns n random bytes as base64url text.
func randomID(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// unix returns t as seconds since the epoch.
func unix(t time.Time) int64 { return t.Unix() }
