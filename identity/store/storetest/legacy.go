package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// legacyCases test the legacy families (a row per token, a row per access
// token), made before the constant scheme, and their conversion. Each
// skips unless the store is a store.LegacySeeder.
var legacyCases = []testCase{
	{"Read", testLegacyRead},
	{"ReadUnknown", testLegacyReadUnknown},
	{"Convert", testLegacyConvert},
	{"ConvertFails", testLegacyConvertFails},
	{"ConvertedRotates", testLegacyConvertedRotates},
	{"RotateRefused", testLegacyRotateRefused},
	{"Revoke", testLegacyRevoke},
	{"RevokeConverted", testLegacyRevokeConverted},
	{"RevokeAfterAccessTokenRevoked", testLegacyRevokeAfterAccessTokenRevoked},
	{"RevokeSubject", testLegacyRevokeSubject},
}

// converted is l after ConvertLegacyFamily at now with salt and next: its
// current token rotated to next, which the family holds as the constant
// scheme does, at generation 2, expiring tokenLife after now, with the
// legacy token as its previous one.
func converted(l legacy, salt, next []byte, now time.Time) legacy {
	f := l.family
	f.Salt, f.Generation = salt, 2
	f.Previous, f.Current = l.current().Hash, next
	f.CurrentExpiresAt, f.RotatedAt = now.Add(tokenLife), now
	tokens := append([]store.RefreshToken(nil), l.tokens...)
	last := &tokens[len(tokens)-1]
	last.RotatedAt, last.Successor = now, next
	return legacy{family: f, tokens: tokens, ats: l.ats}
}

// mustConvert converts l at now to generation 2's token (see gen) and
// returns what it must have become.
func mustConvert(ctx context.Context, t *testing.T, s store.Store, l legacy, now time.Time) legacy {
	t.Helper()
	want := converted(l, []byte("new salt of "+l.family.ID), gen(l.family.ID, 2), now)
	f := want.family
	if err := s.ConvertLegacyFamily(ctx, l.current().Hash, f.Salt, f.Current, f.CurrentExpiresAt, now); err != nil {
		t.Fatalf("ConvertLegacyFamily(%q): %v", l.family.ID, err)
	}
	return want
}

// testLegacyRead: a legacy family's tokens read back exactly as seeded,
// each with the family, which is legacy (generation 0, none of the
// constant scheme's fields) and reads back by its ID too.
func testLegacyRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l, other := legacyFamily("fam1"), legacyFamily("fam2")
	mustSeed(ctx, t, ls, l)
	mustSeed(ctx, t, ls, other)
	checkLegacy(ctx, t, s, "fam1", l)
	checkLegacy(ctx, t, s, "fam2", other)
	if f := readFamily(ctx, t, s, l.family.ID); !f.Legacy() {
		t.Errorf("a legacy family is not Legacy: %+v", f)
	}
	// Seeding records no revocation.
	equal(t, "revocations", revocations(ctx, t, s, t0), nil)
}

// testLegacyReadUnknown: a hash that is not a legacy token's is not
// found, those of a constant family's tokens included.
func testLegacyReadUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustSeed(ctx, t, seeder(t, s), legacyFamily("fam1"))
	f := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "constant"), t0.Add(time.Hour))
	for name, h := range map[string][]byte{
		"an unknown hash":                         hash("unknown"),
		"the current token of a constant family":  f.Current,
		"the previous token of a constant family": f.Previous,
	} {
		_, _, err := s.LegacyRefreshToken(ctx, h)
		wantErr(t, "LegacyRefreshToken of "+name, err, store.ErrNotFound)
	}
}

// testLegacyConvert: converting marks the current legacy token rotated at
// now with its successor, and gives the family exactly the constant
// scheme's fields at generation 2; nothing else changes, and the successor
// is no legacy token.
func testLegacyConvert(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l, other := legacyFamily("fam1"), legacyFamily("fam2")
	mustSeed(ctx, t, ls, l)
	mustSeed(ctx, t, ls, other)
	l = mustConvert(ctx, t, s, l, t0.Add(90*time.Minute))

	checkLegacy(ctx, t, s, "converted family", l)
	if l.family.Legacy() {
		t.Fatal("converted family is still legacy")
	}
	_, _, err := s.LegacyRefreshToken(ctx, l.family.Current)
	wantErr(t, "LegacyRefreshToken of the successor", err, store.ErrNotFound)
	checkLegacy(ctx, t, s, "other family", other)
	equal(t, "revocations", revocations(ctx, t, s, t0), nil)
}

// testLegacyConvertFails: a conversion that fails, for each documented
// reason, changes nothing anywhere. Each subtest has families of its own.
func testLegacyConvertFails(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	now := t0.Add(2 * time.Hour)
	for _, tt := range []struct {
		name string
		// setup stores what the subtest needs, in families named after
		// it, and returns them, and the hash to convert from.
		setup func(name string) (families []legacy, parent []byte)
		want  error
	}{
		{"RotatedToken", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			return []legacy{l}, l.tokens[0].Hash
		}, store.ErrAlreadyRotated},
		{"ConvertedTwice", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			return []legacy{mustConvert(ctx, t, s, l, t0.Add(90*time.Minute))}, l.current().Hash
		}, store.ErrAlreadyRotated},
		{"RotatedTokenOfConverted", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			return []legacy{mustConvert(ctx, t, s, l, t0.Add(90*time.Minute))}, l.tokens[0].Hash
		}, store.ErrAlreadyRotated},
		{"Revoked", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			revokedAt := t0.Add(100 * time.Minute)
			wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, l.family.ID, revokedAt, revokedAt.Add(time.Hour)), nil)
			l.family.RevokedAt = revokedAt
			return []legacy{l}, l.current().Hash
		}, store.ErrFamilyRevoked},
		{"RevokedBefore", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name) // revoked before the constant scheme
			l.family.RevokedAt = t0.Add(time.Hour)
			mustSeed(ctx, t, ls, l)
			return []legacy{l}, l.current().Hash
		}, store.ErrFamilyRevoked},
		{"Unknown", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			return []legacy{l}, hash("unknown")
		}, store.ErrNotFound},
		{"ConstantFamilysToken", func(name string) ([]legacy, []byte) {
			l := legacyFamily(name)
			mustSeed(ctx, t, ls, l)
			return []legacy{l}, mustCreateFamily(ctx, t, s, "constant-"+name).Current
		}, store.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			families, parent := tt.setup(tt.name)
			revsBefore := revocations(ctx, t, s, t0)
			err := s.ConvertLegacyFamily(ctx, parent, []byte("salt of "+tt.name), hash("next of "+tt.name), now.Add(tokenLife), now)
			wantErr(t, "ConvertLegacyFamily", err, tt.want)
			for _, l := range families {
				checkLegacy(ctx, t, s, l.family.ID, l)
			}
			if tt.name == "ConstantFamilysToken" {
				checkFamily(ctx, t, s, "constant family", family("constant-"+tt.name))
			}
			equal(t, "revocations", revocations(ctx, t, s, t0), revsBefore)
		})
	}
}

// testLegacyConvertedRotates: a converted family rotates as a constant one,
// from generation 2.
func testLegacyConvertedRotates(t *testing.T, s store.Store) {
	ctx := Context(t)
	l := legacyFamily("fam1")
	mustSeed(ctx, t, seeder(t, s), l)
	l = mustConvert(ctx, t, s, l, t0.Add(90*time.Minute))
	now := t0.Add(2 * time.Hour)
	err := s.RotateRefreshFamily(ctx, l.family.ID, 1, hash("stale"), now.Add(tokenLife), now)
	wantErr(t, "RotateRefreshFamily of a converted family from 1", err, store.ErrAlreadyRotated)
	f := mustRotate(ctx, t, s, l.family, now)
	equal(t, "generation", f.Generation, 3)
	equal(t, "previous token", f.Previous, gen(f.ID, 2))
	l.family = f
	checkLegacy(ctx, t, s, "family rotated after its conversion", l)
}

// testLegacyRotateRefused: a legacy family does not rotate with
// RotateRefreshFamily (it converts), from its generation 0 or any other.
func testLegacyRotateRefused(t *testing.T, s store.Store) {
	ctx := Context(t)
	l := legacyFamily("fam1")
	mustSeed(ctx, t, seeder(t, s), l)
	now := t0.Add(2 * time.Hour)
	for _, from := range []int{0, -1, 1} {
		err := s.RotateRefreshFamily(ctx, l.family.ID, from, hash("next"), now.Add(tokenLife), now)
		if err == nil {
			t.Errorf("RotateRefreshFamily of a legacy family from %d succeeded", from)
		}
		checkLegacy(ctx, t, s, fmt.Sprintf("legacy family after RotateRefreshFamily from %d", from), l)
	}
}

// testLegacyRevoke: revoking a legacy family records the family's
// revocation and revokes by jti the access tokens recorded for it that
// have not expired at now (one expiring at now has); tokens carry no
// family then, so their jti is what revokes them. Other families are left
// alone.
func testLegacyRevoke(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l, other := legacyFamily("fam1"), legacyFamily("fam2")
	l.ats = append(l.ats, store.IssuedAccessToken{JTI: "fam1/expired", ExpiresAt: t0.Add(30 * time.Minute)})
	mustSeed(ctx, t, ls, l)
	mustSeed(ctx, t, ls, other)
	now, until := t0.Add(2*time.Hour), t0.Add(4*time.Hour) // fam1/at0 expires now
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, l.family.ID, now, until), nil)

	l.family.RevokedAt = now
	checkLegacy(ctx, t, s, "revoked family", l)
	checkLegacy(ctx, t, s, "other family", other)
	at1 := l.ats[1]
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: l.family.ID, ExpiresAt: until, RevokedAt: now},
		{JTI: at1.JTI, ExpiresAt: at1.ExpiresAt, RevokedAt: now},
	})
	// Listed before they expire, the access tokens expired at the
	// revocation would show had they been revoked.
	equal(t, "what is revoked, listed at t0", revokedKeys(ctx, t, s, t0),
		map[string]bool{"family:fam1": true, "jti:fam1/at1": true})
	for _, at := range append(l.ats, other.ats...) {
		got, err := s.AccessTokenRevoked(ctx, at.JTI, "", l.family.Subject, t0)
		wantErr(t, "AccessTokenRevoked", err, nil)
		if want := at.JTI == at1.JTI; got != want {
			t.Errorf("AccessTokenRevoked(%q) = %v, want %v", at.JTI, got, want)
		}
	}
}

// testLegacyRevokeConverted: once converted, and rotated on, a family
// still revokes by jti the access tokens recorded while it was legacy.
func testLegacyRevokeConverted(t *testing.T, s store.Store) {
	ctx := Context(t)
	l := legacyFamily("fam1")
	mustSeed(ctx, t, seeder(t, s), l)
	l = mustConvert(ctx, t, s, l, t0.Add(90*time.Minute))
	l.family = mustRotate(ctx, t, s, l.family, t0.Add(100*time.Minute))
	now, until := t0.Add(2*time.Hour), t0.Add(4*time.Hour) // fam1/at0 expires now
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, l.family.ID, now, until), nil)
	l.family.RevokedAt = now
	checkLegacy(ctx, t, s, "revoked family", l)
	at1 := l.ats[1]
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: l.family.ID, ExpiresAt: until, RevokedAt: now},
		{JTI: at1.JTI, ExpiresAt: at1.ExpiresAt, RevokedAt: now},
	})
	got, err := s.AccessTokenRevoked(ctx, at1.JTI, "", l.family.Subject, t0.Add(time.Hour))
	wantErr(t, "AccessTokenRevoked", err, nil)
	if !got {
		t.Errorf("AccessTokenRevoked(%q) of a converted family revoked = false, want true", at1.JTI)
	}
}

// testLegacyRevokeAfterAccessTokenRevoked: an access token revoked on its
// own, then with its legacy family, is listed once, as first revoked.
func testLegacyRevokeAfterAccessTokenRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	l := legacyFamily("fam1")
	mustSeed(ctx, t, seeder(t, s), l)
	at1 := l.ats[1]
	first, now := t0.Add(90*time.Minute), t0.Add(2*time.Hour)
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, at1.JTI, at1.ExpiresAt, first), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, l.family.ID, now, now.Add(time.Hour)), nil)
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{JTI: at1.JTI, ExpiresAt: at1.ExpiresAt, RevokedAt: first},
		{FamilyID: l.family.ID, ExpiresAt: now.Add(time.Hour), RevokedAt: now},
	})
}

// testLegacyRevokeSubject: revoking a subject revokes its legacy families
// as RevokeRefreshFamily does, their live access tokens by jti included,
// and leaves other subjects' alone.
func testLegacyRevokeSubject(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l, other := legacyFamily("fam1"), legacyFamily("fam2")
	l.family.Subject, other.family.Subject = "alice", "bob"
	mustSeed(ctx, t, ls, l)
	mustSeed(ctx, t, ls, other)
	now, until := t0.Add(2*time.Hour), t0.Add(4*time.Hour) // fam1/at0 expires now
	wantErr(t, "RevokeSubject", s.RevokeSubject(ctx, "alice", now, until), nil)

	l.family.RevokedAt = now
	checkLegacy(ctx, t, s, "family of the revoked subject", l)
	checkLegacy(ctx, t, s, "other subject's family", other)
	at1 := l.ats[1]
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: l.family.ID, ExpiresAt: until, RevokedAt: now},
		{JTI: at1.JTI, ExpiresAt: at1.ExpiresAt, RevokedAt: now},
		{Subject: "alice", NotBefore: now, ExpiresAt: until, RevokedAt: now},
	})
	err := s.ConvertLegacyFamily(ctx, l.current().Hash, []byte("salt"), gen(l.family.ID, 2), now.Add(tokenLife), now)
	wantErr(t, "ConvertLegacyFamily of a family of the revoked subject", err, store.ErrFamilyRevoked)
}
