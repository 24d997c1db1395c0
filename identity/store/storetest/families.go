package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// tokenLife is the sliding lifetime of a refresh token in the suite.
const tokenLife = 14 * 24 * time.Hour

// gen is the hash of generation g's refresh token of the family id.
func gen(id string, g int) []byte { return hash(fmt.Sprintf("%s/%d", id, g)) }

// family is a refresh family of the constant scheme called id, created at
// t0, at generation 1, none of it expired at t0.
func family(id string) store.RefreshFamily {
	return store.RefreshFamily{
		ID:               id,
		ClientID:         "demo-app",
		Subject:          "subject-" + id,
		Scopes:           []string{"openid", "offline_access", "Service/Market"},
		AuthTime:         t0.Add(-time.Minute),
		AMR:              []string{"pwd", "otp", "mfa"},
		Created:          t0,
		ExpiresAt:        t0.Add(30 * 24 * time.Hour),
		Salt:             []byte("salt of " + id),
		Generation:       1,
		Current:          gen(id, 1),
		CurrentExpiresAt: t0.Add(tokenLife),
		Entitlements:     entitle.MustParse("ASX:quotes ASX:depth"),
	}
}

// mustCreateFamily creates the family id (see family) and returns it.
func mustCreateFamily(ctx context.Context, t *testing.T, s store.Store, id string) store.RefreshFamily {
	t.Helper()
	f := family(id)
	if err := s.CreateRefreshFamily(ctx, f, store.FamilyBound{}); err != nil {
		t.Fatalf("CreateRefreshFamily(%q): %v", id, err)
	}
	return f
}

// rotated is f after a rotation at now to the next generation's token
// (see gen), as RotateRefreshFamily documents it.
func rotated(f store.RefreshFamily, now time.Time) store.RefreshFamily {
	f.Previous = f.Current
	f.Generation++
	f.Current = gen(f.ID, f.Generation)
	f.CurrentExpiresAt = now.Add(tokenLife)
	f.RotatedAt = now
	return f
}

// mustRotate rotates f at now (see rotated) and returns the family it
// must have become.
func mustRotate(ctx context.Context, t *testing.T, s store.Store, f store.RefreshFamily, now time.Time) store.RefreshFamily {
	t.Helper()
	next := rotated(f, now)
	if err := s.RotateRefreshFamily(ctx, f.ID, f.Generation, next.Current, next.CurrentExpiresAt, now); err != nil {
		t.Fatalf("RotateRefreshFamily(%q, from %d): %v", f.ID, f.Generation, err)
	}
	return next
}

// readFamily reads the family id, normalised.
func readFamily(ctx context.Context, t *testing.T, s store.Store, id string) store.RefreshFamily {
	t.Helper()
	f, err := s.RefreshFamily(ctx, id)
	if err != nil {
		t.Fatalf("RefreshFamily(%q): %v", id, err)
	}
	return normFamily(t, f)
}

// checkFamily checks that the family f.ID is stored as f.
func checkFamily(ctx context.Context, t *testing.T, s store.Store, what string, f store.RefreshFamily) {
	t.Helper()
	equal(t, what, readFamily(ctx, t, s, f.ID), normFamily(t, f))
}

// legacy is a legacy family called id, as a store of the scheme before
// the constant one holds it after one rotation: its first token rotated
// at t0+1h to a second one, the access tokens issued with each recorded.
// None of it has expired at t0+2h; the first access token expires then.
type legacy struct {
	family store.RefreshFamily
	tokens []store.RefreshToken // the rotated first, the current second
	ats    []store.IssuedAccessToken
}

func legacyFamily(id string) legacy {
	f := family(id)
	f.Salt, f.Generation, f.Current, f.CurrentExpiresAt = nil, 0, nil, time.Time{}
	f.Entitlements = entitle.Set{} // legacy families came before entitlements
	f.AMR = nil                    // and before authentication methods
	rotatedAt := t0.Add(time.Hour)
	first := store.RefreshToken{Hash: hash(id + "/legacy/0"), FamilyID: id, IssuedAt: t0,
		ExpiresAt: t0.Add(tokenLife), RotatedAt: rotatedAt, Successor: hash(id + "/legacy/1")}
	second := store.RefreshToken{Hash: first.Successor, FamilyID: id, Parent: first.Hash, IssuedAt: rotatedAt,
		ExpiresAt: rotatedAt.Add(tokenLife)}
	return legacy{
		family: f,
		tokens: []store.RefreshToken{first, second},
		ats: []store.IssuedAccessToken{
			{JTI: id + "/at0", ExpiresAt: t0.Add(2 * time.Hour)},
			{JTI: id + "/at1", ExpiresAt: rotatedAt.Add(2 * time.Hour)},
		},
	}
}

// current is the legacy family's unrotated token.
func (l legacy) current() store.RefreshToken { return l.tokens[len(l.tokens)-1] }

// seeder is s as a store.LegacySeeder; it skips t when s holds no legacy
// families.
func seeder(t *testing.T, s store.Store) store.LegacySeeder {
	t.Helper()
	ls, ok := s.(store.LegacySeeder)
	if !ok {
		t.Skipf("%T does not implement store.LegacySeeder: it cannot hold legacy families", s)
	}
	return ls
}

// mustSeed stores l in s.
func mustSeed(ctx context.Context, t *testing.T, ls store.LegacySeeder, l legacy) {
	t.Helper()
	if err := ls.SeedLegacyFamily(ctx, l.family, l.tokens, l.ats); err != nil {
		t.Fatalf("SeedLegacyFamily(%q): %v", l.family.ID, err)
	}
}

// readLegacy reads the legacy token with hash h and its family, normalised.
func readLegacy(ctx context.Context, t *testing.T, s store.Store, h []byte) (store.RefreshToken, store.RefreshFamily) {
	t.Helper()
	r, f, err := s.LegacyRefreshToken(ctx, h)
	if err != nil {
		t.Fatalf("LegacyRefreshToken: %v", err)
	}
	return normToken(t, r), normFamily(t, f)
}

// checkLegacy checks that l's tokens are stored as they are in l, each
// with l's family.
func checkLegacy(ctx context.Context, t *testing.T, s store.Store, what string, l legacy) {
	t.Helper()
	for i, tok := range l.tokens {
		gotT, gotF := readLegacy(ctx, t, s, tok.Hash)
		equal(t, fmt.Sprintf("%s: token %d", what, i), gotT, normToken(t, tok))
		equal(t, fmt.Sprintf("%s: family of token %d", what, i), gotF, normFamily(t, l.family))
	}
	checkFamily(ctx, t, s, what+": family", l.family)
}
