package verify

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

// Identity is who a verified token speaks for. It is shared between
// callers (and goroutines) through the cache: treat it as read-only.
type Identity struct {
	Subject  string
	ClientID string
	Scopes   []string
	Issuer   string
	JTI      string
	FamilyID string // the refresh-token family it was issued from ("fid"), if any
	Expiry   time.Time
	IssuedAt time.Time
	AuthTime time.Time // zero for tokens without a user
	// Entitlements are the market-data pairs of the token's
	// authorization_details (docs/entitlements.md); empty when it has none.
	Entitlements entitle.Set

	payload    []byte // the verified claims, decoded on demand
	claimsOnce sync.Once
	claims     map[string]any
}

// Claims returns every claim of the token, decoded on first use (most
// requests never need more than the fields above). The map is shared: do
// not modify it. Safe for concurrent use.
func (id *Identity) Claims() map[string]any {
	id.claimsOnce.Do(func() {
		id.claims = map[string]any{}
		_ = json.Unmarshal(id.payload, &id.claims) // verified JSON: cannot fail
	})
	return id.claims
}

// Authenticated is when the authentication behind the token happened, as
// far as a revocation of its subject goes: its auth_time, or its iat when
// it has none or a later one. A token minted after a user's sessions were
// ended, from an authentication before (a login that was checking the old
// password as it changed), is covered by that revocation.
func (id *Identity) Authenticated() time.Time {
	if !id.AuthTime.IsZero() && id.AuthTime.Before(id.IssuedAt) {
		return id.AuthTime
	}
	return id.IssuedAt
}

// narrowed is a copy of id whose Entitlements are those of id that set
// holds.
func (id *Identity) narrowed(set entitle.Set) *Identity {
	return &Identity{Subject: id.Subject, ClientID: id.ClientID, Scopes: id.Scopes, Issuer: id.Issuer, JTI: id.JTI,
		FamilyID: id.FamilyID, Expiry: id.Expiry, IssuedAt: id.IssuedAt, AuthTime: id.AuthTime,
		Entitlements: id.Entitlements.Intersect(set), payload: id.payload}
}

// HasScope reports whether the token grants scope.
func (id *Identity) HasScope(scope string) bool {
	return slices.Contains(id.Scopes, scope)
}

// AudienceHolds reports whether a decoded "aud" claim (a string, or an
// array of strings, RFC 7519 §4.1.3) names the audience name.
func AudienceHolds(aud any, name string) bool {
	switch a := aud.(type) {
	case string:
		return a == name
	case []any:
		return slices.Contains(a, any(name))
	}
	return false
}
