package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var refreshCases = []testCase{
	{"CreateAndRead", testRefreshCreateAndRead},
	{"ReadUnknown", testRefreshReadUnknown},
	{"CreateTakenFamilyID", testRefreshCreateTakenFamilyID},
	{"CreateTakenTokenHash", testRefreshCreateTakenTokenHash},
	{"Rotate", testRefreshRotate},
	{"RotateTwice", testRefreshRotateTwice},
	{"RotateUnknown", testRefreshRotateUnknown},
	{"RotateRevoked", testRefreshRotateRevoked},
	{"RotateToTakenHash", testRefreshRotateToTakenHash},
	{"RecordAccessToken", testRefreshRecordAccessToken},
	{"RecordAccessTokenErrors", testRefreshRecordAccessTokenErrors},
	{"Revoke", testRefreshRevoke},
	{"RevokeTwice", testRefreshRevokeTwice},
	{"RevokeUnknown", testRefreshRevokeUnknown},
	{"RevokeAfterAccessTokenRevoked", testRefreshRevokeAfterAccessTokenRevoked},
}

func testRefreshCreateAndRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	mustCreateFamily(ctx, t, s, "fam2")
	gotT, gotF := readToken(ctx, t, s, first.Hash)
	equal(t, "token", gotT, normToken(t, first))
	equal(t, "family", gotF, normFamily(t, f))
}

func testRefreshReadUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	_, _, err := s.RefreshToken(ctx, hash("unknown"))
	wantErr(t, "RefreshToken of an unknown hash", err, store.ErrNotFound)
}

func testRefreshCreateTakenFamilyID(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	_, other, otherAT := family("fam2")
	err := s.CreateRefreshFamily(ctx, f, store.RefreshToken{Hash: other.Hash, IssuedAt: t0, ExpiresAt: other.ExpiresAt}, otherAT)
	wantErr(t, "CreateRefreshFamily with a taken ID", err, store.ErrAlreadyExists)
	_, _, err = s.RefreshToken(ctx, other.Hash)
	wantErr(t, "RefreshToken of the refused token", err, store.ErrNotFound)
	gotT, _ := readToken(ctx, t, s, first.Hash)
	equal(t, "first token", gotT, normToken(t, first))
}

// testRefreshCreateTakenTokenHash: a family whose first token is refused is
// not stored either.
func testRefreshCreateTakenTokenHash(t *testing.T, s store.Store) {
	ctx := Context(t)
	f1, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	f2, second, at2 := family("fam2")
	taken := second
	taken.Hash = first.Hash
	wantErr(t, "CreateRefreshFamily with a taken token hash",
		s.CreateRefreshFamily(ctx, f2, taken, at2), store.ErrAlreadyExists)
	_, gotF := readToken(ctx, t, s, first.Hash)
	equal(t, "family of the first token", gotF, normFamily(t, f1))
	// Nothing of fam2 was kept: it can be created now.
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f2, second, at2), nil)
}

func testRefreshRotate(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Hour)
	c1 := child(first, "fam1/1", now)
	at1 := store.IssuedAccessToken{JTI: "fam1/at1", ExpiresAt: now.Add(time.Hour)}
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first.Hash, c1, at1, now), nil)

	wantParent := first
	wantParent.RotatedAt, wantParent.Successor = now, c1.Hash
	gotT, gotF := readToken(ctx, t, s, first.Hash)
	equal(t, "parent", gotT, normToken(t, wantParent))
	equal(t, "family", gotF, normFamily(t, f))
	gotT, gotF = readToken(ctx, t, s, c1.Hash)
	equal(t, "child", gotT, normToken(t, c1))
	equal(t, "child's family", gotF, normFamily(t, f))

	// The child rotates in turn; its FamilyID may be left to the store.
	later := now.Add(time.Hour)
	c2 := child(c1, "fam1/2", later)
	c2.FamilyID = ""
	at2 := store.IssuedAccessToken{JTI: "fam1/at2", ExpiresAt: later.Add(time.Hour)}
	wantErr(t, "RotateRefreshToken of the child", s.RotateRefreshToken(ctx, c1.Hash, c2, at2, later), nil)
	gotT, _ = readToken(ctx, t, s, c2.Hash)
	c2.FamilyID = "fam1"
	equal(t, "grandchild", gotT, normToken(t, c2))
}

func testRefreshRotateTwice(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Hour)
	c1, c2 := child(first, "fam1/1", now), child(first, "fam1/1bis", now.Add(time.Second))
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first.Hash, c1,
		store.IssuedAccessToken{JTI: "at1", ExpiresAt: now.Add(time.Hour)}, now), nil)
	wantErr(t, "RotateRefreshToken again", s.RotateRefreshToken(ctx, first.Hash, c2,
		store.IssuedAccessToken{JTI: "at2", ExpiresAt: now.Add(time.Hour)}, now.Add(time.Second)), store.ErrAlreadyRotated)

	gotT, _ := readToken(ctx, t, s, first.Hash)
	equal(t, "parent's successor", gotT.Successor, c1.Hash)
	equal(t, "parent's RotatedAt", gotT.RotatedAt, now)
	_, _, err := s.RefreshToken(ctx, c2.Hash)
	wantErr(t, "RefreshToken of the losing child", err, store.ErrNotFound)
}

func testRefreshRotateUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Hour)
	c := child(first, "fam1/1", now)
	err := s.RotateRefreshToken(ctx, hash("unknown"), c, store.IssuedAccessToken{JTI: "at1", ExpiresAt: now.Add(time.Hour)}, now)
	wantErr(t, "RotateRefreshToken of an unknown token", err, store.ErrNotFound)
	_, _, err = s.RefreshToken(ctx, c.Hash)
	wantErr(t, "RefreshToken of the child", err, store.ErrNotFound)
}

func testRefreshRotateRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Hour)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", now), nil)
	c := child(first, "fam1/1", now)
	at := store.IssuedAccessToken{JTI: "at1", ExpiresAt: now.Add(time.Hour)}
	err := s.RotateRefreshToken(ctx, first.Hash, c, at, now.Add(time.Second))
	wantErr(t, "RotateRefreshToken in a revoked family", err, store.ErrFamilyRevoked)
	gotT, _ := readToken(ctx, t, s, first.Hash)
	equal(t, "parent", gotT, normToken(t, first))
	_, _, err = s.RefreshToken(ctx, c.Hash)
	wantErr(t, "RefreshToken of the child", err, store.ErrNotFound)
	if revokedJTIs(ctx, t, s, now)["at1"] {
		t.Errorf("the access token of a failed rotation was recorded and revoked")
	}
}

// testRefreshRotateToTakenHash: a rotation whose child is refused changes
// nothing.
func testRefreshRotateToTakenHash(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	_, other, _ := mustCreateFamily(ctx, t, s, "fam2")
	now := t0.Add(time.Hour)
	c := child(first, "fam1/1", now)
	c.Hash = other.Hash
	err := s.RotateRefreshToken(ctx, first.Hash, c, store.IssuedAccessToken{JTI: "at1", ExpiresAt: now.Add(time.Hour)}, now)
	wantErr(t, "RotateRefreshToken to a taken hash", err, store.ErrAlreadyExists)
	gotT, _ := readToken(ctx, t, s, first.Hash)
	equal(t, "parent", gotT, normToken(t, first))
	gotT, _ = readToken(ctx, t, s, other.Hash)
	equal(t, "other family's token", gotT, normToken(t, other))
	// The parent can still rotate.
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first.Hash, child(first, "fam1/1", now),
		store.IssuedAccessToken{JTI: "at1", ExpiresAt: now.Add(time.Hour)}, now), nil)
}

func testRefreshRecordAccessToken(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, _, at0 := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Minute)
	grace := store.IssuedAccessToken{JTI: "fam1/grace", ExpiresAt: now.Add(time.Hour)}
	wantErr(t, "RecordAccessToken", s.RecordAccessToken(ctx, "fam1", grace), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", now), nil)
	revs, err := s.Revocations(ctx, now)
	wantErr(t, "Revocations", err, nil)
	equal(t, "Revocations", normRevocations(t, revs), []store.Revocation{
		{JTI: at0.JTI, ExpiresAt: at0.ExpiresAt, RevokedAt: now},
		{JTI: grace.JTI, ExpiresAt: grace.ExpiresAt, RevokedAt: now},
	})
}

func testRefreshRecordAccessTokenErrors(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	at := store.IssuedAccessToken{JTI: "x", ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "RecordAccessToken in an unknown family", s.RecordAccessToken(ctx, "nope", at), store.ErrNotFound)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", t0), nil)
	wantErr(t, "RecordAccessToken in a revoked family", s.RecordAccessToken(ctx, "fam1", at), store.ErrFamilyRevoked)
	if revokedJTIs(ctx, t, s, t0)["x"] {
		t.Errorf("a refused access token is listed as revoked")
	}
}

// testRefreshRevoke: revoking a family revokes the access tokens issued
// from it that have not expired, however they were recorded, and leaves
// other families alone.
func testRefreshRevoke(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, at0 := mustCreateFamily(ctx, t, s, "fam1")
	_, otherFirst, otherAT := mustCreateFamily(ctx, t, s, "fam2")
	rotatedAt := t0.Add(50 * time.Minute)
	c := child(first, "fam1/1", rotatedAt)
	at1 := store.IssuedAccessToken{JTI: "fam1/at1", ExpiresAt: rotatedAt.Add(time.Hour)}
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first.Hash, c, at1, rotatedAt), nil)
	grace := store.IssuedAccessToken{JTI: "fam1/grace", ExpiresAt: rotatedAt.Add(time.Hour)}
	wantErr(t, "RecordAccessToken", s.RecordAccessToken(ctx, "fam1", grace), nil)
	expired := store.IssuedAccessToken{JTI: "fam1/expired", ExpiresAt: t0.Add(10 * time.Minute)}
	wantErr(t, "RecordAccessToken", s.RecordAccessToken(ctx, "fam1", expired), nil)
	atNow := store.IssuedAccessToken{JTI: "fam1/expiring-now", ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "RecordAccessToken", s.RecordAccessToken(ctx, "fam1", atNow), nil)

	now := t0.Add(time.Hour) // at0 and atNow expire now
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", now), nil)

	_, gotF := readToken(ctx, t, s, c.Hash)
	f.RevokedAt = now
	equal(t, "revoked family", gotF, normFamily(t, f))
	_, gotF = readToken(ctx, t, s, otherFirst.Hash)
	equal(t, "other family's RevokedAt", gotF.RevokedAt, time.Time{})

	revs, err := s.Revocations(ctx, now)
	wantErr(t, "Revocations", err, nil)
	equal(t, "Revocations", normRevocations(t, revs), []store.Revocation{
		{JTI: at1.JTI, ExpiresAt: at1.ExpiresAt, RevokedAt: now},
		{JTI: grace.JTI, ExpiresAt: grace.ExpiresAt, RevokedAt: now},
	})
	// Earlier, the first access token would have been listed had it been
	// revoked: it was not, since it had expired by the revocation.
	if revokedJTIs(ctx, t, s, t0)[at0.JTI] {
		t.Errorf("the access token %q, expired at the revocation, was revoked", at0.JTI)
	}
	if revokedJTIs(ctx, t, s, t0)[otherAT.JTI] {
		t.Errorf("the access token of another family was revoked")
	}
}

func testRefreshRevokeTwice(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, at0 := mustCreateFamily(ctx, t, s, "fam1")
	now := t0.Add(time.Minute)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", now), nil)
	wantErr(t, "RevokeRefreshFamily again", s.RevokeRefreshFamily(ctx, "fam1", now.Add(time.Minute)), nil)
	_, gotF := readToken(ctx, t, s, first.Hash)
	f.RevokedAt = now
	equal(t, "family revoked twice", gotF, normFamily(t, f))
	revs, err := s.Revocations(ctx, now)
	wantErr(t, "Revocations", err, nil)
	equal(t, "Revocations", normRevocations(t, revs), []store.Revocation{
		{JTI: at0.JTI, ExpiresAt: at0.ExpiresAt, RevokedAt: now},
	})
}

func testRefreshRevokeUnknown(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	wantErr(t, "RevokeRefreshFamily of an unknown family", s.RevokeRefreshFamily(ctx, "nope", t0), store.ErrNotFound)
}

// testRefreshRevokeAfterAccessTokenRevoked: an access token revoked on its
// own, then with its family, is listed once.
func testRefreshRevokeAfterAccessTokenRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	_, _, at0 := mustCreateFamily(ctx, t, s, "fam1")
	first := t0.Add(time.Minute)
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, at0.JTI, at0.ExpiresAt, first), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", first.Add(time.Minute)), nil)
	revs, err := s.Revocations(ctx, first)
	wantErr(t, "Revocations", err, nil)
	if len(revs) != 1 || revs[0].JTI != at0.JTI {
		t.Errorf("Revocations: %+v, want %q once", revs, at0.JTI)
	}
}
