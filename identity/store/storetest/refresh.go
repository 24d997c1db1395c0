package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var refreshCases = []testCase{
	{"CreateAndRead", testRefreshCreateAndRead},
	{"ReadUnknown", testRefreshReadUnknown},
	{"State", testRefreshState},
	{"CreateTakenID", testRefreshCreateTakenID},
	{"CreateRefusesNotNew", testRefreshCreateRefusesNotNew},
	{"Rotate", testRefreshRotate},
	{"RotateFails", testRefreshRotateFails},
	{"ConstantStorage", testRefreshConstantStorage},
	{"Revoke", testRefreshRevoke},
	{"RevokeTwice", testRefreshRevokeTwice},
	{"RevokeUnknown", testRefreshRevokeUnknown},
}

// testRefreshCreateAndRead: a family reads back exactly as created, at
// generation 1, with no previous token, and not legacy.
func testRefreshCreateAndRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	f2 := mustCreateFamily(ctx, t, s, "fam2")
	got := readFamily(ctx, t, s, "fam1")
	equal(t, "family", got, normFamily(t, f))
	if got.Legacy() || got.Generation != 1 || got.Previous != nil || !got.RotatedAt.IsZero() {
		t.Errorf("a new family: Legacy %v, Generation %d, Previous %x, RotatedAt %v; want false, 1, none, zero",
			got.Legacy(), got.Generation, got.Previous, got.RotatedAt)
	}
	checkFamily(ctx, t, s, "other family", f2)
}

func testRefreshReadUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	for _, id := range []string{"unknown", "FAM1", ""} {
		_, err := s.RefreshFamily(ctx, id)
		wantErr(t, fmt.Sprintf("RefreshFamily(%q)", id), err, store.ErrNotFound)
	}
}

// testRefreshCreateTakenID: a family whose ID is taken is refused and the
// one stored is left as it was.
func testRefreshCreateTakenID(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	other := family("fam2")
	other.ID = f.ID
	wantErr(t, "CreateRefreshFamily with a taken ID", s.CreateRefreshFamily(ctx, other, store.FamilyBound{}), store.ErrAlreadyExists)
	checkFamily(ctx, t, s, "family after the refused create", f)
}

// testRefreshCreateRefusesNotNew: CreateRefreshFamily stores only a new
// family of the constant scheme (generation 1, a current hash, no previous
// one): a generation-0 family would be a legacy one without tokens, a
// later generation one that was never rotated. Nothing is stored.
func testRefreshCreateRefusesNotNew(t *testing.T, s store.Store) {
	ctx := Context(t)
	for _, tt := range []struct {
		name   string
		change func(f *store.RefreshFamily)
	}{
		{"Generation0", func(f *store.RefreshFamily) { f.Generation = 0 }},
		{"Generation2", func(f *store.RefreshFamily) { f.Generation = 2 }},
		{"NoCurrent", func(f *store.RefreshFamily) { f.Current = nil }},
		{"Previous", func(f *store.RefreshFamily) { f.Previous = hash("previous") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := family("fam-" + tt.name)
			tt.change(&f)
			if err := s.CreateRefreshFamily(ctx, f, store.FamilyBound{}); err == nil {
				t.Errorf("CreateRefreshFamily of %+v succeeded", f)
			}
			_, err := s.RefreshFamily(ctx, f.ID)
			wantErr(t, "RefreshFamily of the refused family", err, store.ErrNotFound)
		})
	}
}

// testRefreshRotate: each rotation moves the generation on, the current
// token to Previous and the next one to Current, with its expiry and the
// rotation time; other families are left alone.
func testRefreshRotate(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	other := mustCreateFamily(ctx, t, s, "fam2")
	for i := range 3 {
		now := t0.Add(time.Duration(i+1) * time.Hour)
		want := rotated(f, now)
		wantErr(t, fmt.Sprintf("RotateRefreshFamily from %d", f.Generation),
			s.RotateRefreshFamily(ctx, f.ID, f.Generation, want.Current, want.CurrentExpiresAt, now), nil)
		checkFamily(ctx, t, s, fmt.Sprintf("family at generation %d", want.Generation), want)
		f = want
	}
	equal(t, "generation after 3 rotations", f.Generation, 4)
	equal(t, "previous token after 3 rotations", f.Previous, gen(f.ID, 3))
	checkFamily(ctx, t, s, "other family", other)
}

// testRefreshRotateFails: a rotation that fails, for each documented
// reason, changes nothing, in the family it names or elsewhere. Each
// subtest has families of its own.
func testRefreshRotateFails(t *testing.T, s store.Store) {
	ctx := Context(t)
	for _, tt := range []struct {
		name string
		fam  string // "live" (at generation 2), "revoked" (the same, revoked) or "unknown"
		from int
		want error // nil: any error
	}{
		{"Stale", "live", 1, store.ErrAlreadyRotated},
		{"Future", "live", 3, store.ErrAlreadyRotated},
		{"Revoked", "revoked", 2, store.ErrFamilyRevoked},
		{"Unknown", "unknown", 1, store.ErrNotFound},
		{"FromZero", "live", 0, nil},
		{"FromNegative", "live", -1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			live := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "live-"+tt.name), t0.Add(time.Hour))
			revoked := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "revoked-"+tt.name), t0.Add(time.Hour))
			revokedAt := t0.Add(2 * time.Hour)
			wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, revoked.ID, revokedAt, revokedAt.Add(time.Hour)), nil)
			revoked.RevokedAt = revokedAt
			revsBefore := revocations(ctx, t, s, revokedAt)

			now := t0.Add(3 * time.Hour)
			id := tt.fam + "-" + tt.name
			err := s.RotateRefreshFamily(ctx, id, tt.from, hash("next of "+tt.name), now.Add(tokenLife), now)
			what := fmt.Sprintf("RotateRefreshFamily(%q, from %d)", id, tt.from)
			if tt.want == nil {
				if err == nil {
					t.Errorf("%s succeeded", what)
				}
			} else {
				wantErr(t, what, err, tt.want)
			}
			checkFamily(ctx, t, s, "live family", live)
			checkFamily(ctx, t, s, "revoked family", revoked)
			_, err = s.RefreshFamily(ctx, "unknown-"+tt.name)
			wantErr(t, "RefreshFamily of the unknown family", err, store.ErrNotFound)
			equal(t, "revocations", revocations(ctx, t, s, revokedAt), revsBefore)
			// The live family still rotates from its generation.
			mustRotate(ctx, t, s, live, now)
		})
	}
}

// testRefreshConstantStorage: a family costs the store the same after many
// rotations as after one. Through the interface: it holds the current and
// the previous token and no older one (those are neither legacy tokens nor
// rotatable), rotations record no revocation, and once expired the family
// is one record to remove, as a family rotated once is.
func testRefreshConstantStorage(t *testing.T, s store.Store) {
	ctx := Context(t)
	const rotations = 100
	once := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "once"), t0.Add(time.Minute))
	many := family("many")
	many.ExpiresAt = once.ExpiresAt.Add(time.Hour)
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, many, store.FamilyBound{}), nil)
	for i := 1; i <= rotations; i++ {
		many = mustRotate(ctx, t, s, many, t0.Add(time.Duration(i)*time.Minute))
		got := readFamily(ctx, t, s, many.ID)
		equal(t, fmt.Sprintf("family after %d rotations", i), got, normFamily(t, many))
	}
	equal(t, "generation", many.Generation, rotations+1)
	equal(t, "current token", many.Current, gen("many", rotations+1))
	equal(t, "previous token", many.Previous, gen("many", rotations))

	later := t0.Add(time.Duration(rotations+1) * time.Minute)
	for g := 1; g <= rotations; g++ {
		_, _, err := s.LegacyRefreshToken(ctx, gen("many", g))
		wantErr(t, fmt.Sprintf("LegacyRefreshToken of the old generation %d", g), err, store.ErrNotFound)
		err = s.RotateRefreshFamily(ctx, many.ID, g, hash("replay"), later.Add(tokenLife), later)
		wantErr(t, fmt.Sprintf("RotateRefreshFamily from the old generation %d", g), err, store.ErrAlreadyRotated)
	}
	checkFamily(ctx, t, s, "family after the refused rotations", many)
	equal(t, "revocations after the rotations", revocations(ctx, t, s, t0), nil)

	n, err := s.DeleteExpired(ctx, once.ExpiresAt)
	wantErr(t, "DeleteExpired of the family rotated once", err, nil)
	equal(t, "records removed with the family rotated once", n, int64(1))
	checkFamily(ctx, t, s, "family rotated many times", many)
	n, err = s.DeleteExpired(ctx, many.ExpiresAt)
	wantErr(t, "DeleteExpired of the family rotated many times", err, nil)
	equal(t, fmt.Sprintf("records removed with the family rotated %d times", rotations), n, int64(1))
	_, err = s.RefreshFamily(ctx, many.ID)
	wantErr(t, "RefreshFamily of the removed family", err, store.ErrNotFound)
}

// testRefreshRevoke: revoking a family marks it revoked at now, changes
// nothing else in it, and records one revocation, of the family, lasting
// until tokensUntil; other families are left alone.
func testRefreshRevoke(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "fam1"), t0.Add(time.Hour))
	other := mustCreateFamily(ctx, t, s, "fam2")
	now, until := t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, f.ID, now, until), nil)

	f.RevokedAt = now
	checkFamily(ctx, t, s, "revoked family", f)
	checkFamily(ctx, t, s, "other family", other)
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: f.ID, ExpiresAt: until, RevokedAt: now},
	})
	for _, tt := range []struct {
		familyID string
		want     bool
	}{{f.ID, true}, {other.ID, false}, {"FAM1", false}, {"", false}} {
		got, err := s.AccessTokenRevoked(ctx, "at", tt.familyID, f.Subject, now)
		wantErr(t, "AccessTokenRevoked", err, nil)
		if got != tt.want {
			t.Errorf("AccessTokenRevoked of a token of family %q = %v, want %v", tt.familyID, got, tt.want)
		}
	}
}

// testRefreshRevokeTwice: revoking a revoked family is not an error and
// changes nothing, its revocation included.
func testRefreshRevokeTwice(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	now, until := t0.Add(time.Minute), t0.Add(time.Hour)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, f.ID, now, until), nil)
	wantErr(t, "RevokeRefreshFamily again", s.RevokeRefreshFamily(ctx, f.ID, now.Add(time.Minute), until.Add(time.Hour)), nil)
	f.RevokedAt = now
	checkFamily(ctx, t, s, "family revoked twice", f)
	equal(t, "revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: f.ID, ExpiresAt: until, RevokedAt: now},
	})
}

func testRefreshRevokeUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	wantErr(t, "RevokeRefreshFamily of an unknown family",
		s.RevokeRefreshFamily(ctx, "nope", t0, t0.Add(time.Hour)), store.ErrNotFound)
	equal(t, "revocations", revocations(ctx, t, s, t0), nil)
	checkFamily(ctx, t, s, "other family", f)
}
