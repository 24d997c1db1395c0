package tokens

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
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
	// AuthTime, ACR and AMR say how the user authenticated (RFC 9068
	// §2.2.1), as the ID token does: a resource reads whether a second
	// factor was passed here. None for client credentials.
	AuthTime int64    `json:"auth_time,omitempty"`
	ACR      string   `json:"acr,omitempty"`
	AMR      []string `json:"amr,omitempty"`
	// FamilyID names the refresh-token family the token was issued from,
	// so that revoking the family revokes it without a record of its own.
	FamilyID string `json:"fid,omitempty"`
	// AuthorizationDetails are the market-data pairs the token grants
	// (RFC 9396 §9.1, entitle's one entry per venue); none when it grants
	// none.
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`
	ProfileClaims
}

// idClaims are an ID token's claims (OpenID Connect Core §2).
type idClaims struct {
	Issuer   string   `json:"iss"`
	Subject  string   `json:"sub"`
	Audience string   `json:"aud"`
	Expiry   int64    `json:"exp"`
	IssuedAt int64    `json:"iat"`
	AuthTime int64    `json:"auth_time,omitempty"`
	ACR      string   `json:"acr,omitempty"`
	AMR      []string `json:"amr,omitempty"`
	Nonce    string   `json:"nonce,omitempty"`
	// SessionID is the login session's public id (OpenID Connect
	// Front-Channel and Back-Channel Logout), for tokens issued through the
	// browser flows.
	SessionID string `json:"sid,omitempty"`
	AtHash    string `json:"at_hash,omitempty"`
	CHash     string `json:"c_hash,omitempty"`
	ProfileClaims
}

// ProfileClaims are the user claims that scopes grant (OpenID Connect
// Core §5.4).
type ProfileClaims struct {
	Name              string   `json:"name,omitempty"`
	PreferredUsername string   `json:"preferred_username,omitempty"`
	UpdatedAt         int64    `json:"updated_at,omitempty"`
	Email             string   `json:"email,omitempty"`
	EmailVerified     *bool    `json:"email_verified,omitempty"`
	Role              []string `json:"role,omitempty"`
}

// UserClaims returns the claims of u that scopes grant.
func UserClaims(u *store.User, scopes []string) ProfileClaims {
	var p ProfileClaims
	if u == nil {
		return p
	}
	for _, s := range scopes {
		switch s {
		case oauth.ScopeProfile:
			p.Name = u.DisplayName
			p.PreferredUsername = u.Username
			if !u.Updated.IsZero() {
				p.UpdatedAt = u.Updated.Unix()
			}
		case oauth.ScopeEmail:
			if u.Email != "" {
				p.Email = u.Email
				v := u.EmailVerified
				p.EmailVerified = &v
			}
		case oauth.ScopeRoles:
			p.Role = u.Roles
		}
	}
	return p
}

// halfHash is the at_hash of an access token, or the c_hash of a code, in
// an ID token signed with alg (OpenID Connect Core §3.1.3.6, §3.3.2.11):
// the left half of its hash with the hash of alg, base64url. SHA-256 for
// RS256 and ES256; SHA-512 for EdDSA with Ed25519, whose signature hashes
// with SHA-512 (as go-oidc and node's oidc-token-hash compute it).
func halfHash(alg, value string) string {
	if alg == keys.EdDSA {
		sum := sha512.Sum512([]byte(value))
		return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
	}
	sum := sha256.Sum256([]byte(value))
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
