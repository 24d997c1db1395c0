package store

import (
	"time"

	"github.com/gatehouse/gatehouse/entitle"
)

// Revocation revokes access tokens: one (JTI), every one issued from a
// refresh family (FamilyID, the tokens' "fid" claim), or every one of a
// subject issued before NotBefore (Subject). Exactly one of JTI, FamilyID
// and Subject is set.
//
// With Subject and Entitlements, it is an entitlement change, not an end:
// the subject's market-data entitlements became *Entitlements at
// NotBefore (Users.SetEntitlements records it). The tokens it covers
// (Narrows) are refused, but their holder may keep what they held of the
// new set; an entitlement change never refuses a refresh or a login.
type Revocation struct {
	JTI       string
	FamilyID  string
	Subject   string
	NotBefore time.Time // with Subject: tokens issued before it are revoked
	ExpiresAt time.Time // no token it covers lives past it; then it is removed
	RevokedAt time.Time
	// Entitlements, with Subject, is the subject's whole set of pairs
	// after the change (possibly empty); nil for every other revocation.
	Entitlements *entitle.Set
}

// Narrows reports whether r, an entitlement change, covers an access
// token of its subject issued at iat and holding the pairs held: one
// issued before the second of NotBefore (iat has whole seconds, so a
// token of that second may have come before the change; one that holds
// no pair the change took away is let through), or one holding a pair
// outside the new set whenever it was issued (minted from a read of the
// user made before the change committed). The holder of such a token
// holds held ∩ *r.Entitlements now. False for any other revocation.
func (r *Revocation) Narrows(iat time.Time, held entitle.Set) bool {
	if r.Entitlements == nil || r.Subject == "" {
		return false
	}
	return iat.Before(r.NotBefore.Truncate(time.Second)) || !held.SubsetOf(*r.Entitlements)
}
