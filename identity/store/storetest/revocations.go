package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var revocationCases = []testCase{
	{"Empty", testRevocationsEmpty},
	{"RevokeAndList", testRevocationsRevokeAndList},
	{"RevokeTwice", testRevocationsRevokeTwice},
	{"ExpiredNotListed", testRevocationsExpiredNotListed},
}

var deleteExpiredCases = []testCase{
	{"NothingExpired", testDeleteExpiredNothing},
	{"RemovesExpired", testDeleteExpiredRemoves},
}

func testRevocationsEmpty(t *testing.T, s store.Store) {
	ctx := Context(t)
	revs, err := s.Revocations(ctx, t0)
	wantErr(t, "Revocations", err, nil)
	if len(revs) != 0 {
		t.Errorf("Revocations of an empty store: %+v", revs)
	}
}

func testRevocationsRevokeAndList(t *testing.T, s store.Store) {
	ctx := Context(t)
	want := []store.Revocation{
		{JTI: "a", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0.Add(-3 * time.Minute)},
		{JTI: "c", ExpiresAt: t0.Add(2 * time.Hour), RevokedAt: t0.Add(-2 * time.Minute)},
		{JTI: "b", ExpiresAt: t0.Add(30 * time.Minute), RevokedAt: t0.Add(-time.Minute)},
	}
	for _, i := range []int{1, 2, 0} {
		r := want[i]
		wantErr(t, "RevokeAccessToken "+r.JTI, s.RevokeAccessToken(ctx, r.JTI, r.ExpiresAt, r.RevokedAt), nil)
	}
	revs, err := s.Revocations(ctx, t0)
	wantErr(t, "Revocations", err, nil)
	equal(t, "Revocations, oldest first", normRevocations(t, revs), want)
}

func testRevocationsRevokeTwice(t *testing.T, s store.Store) {
	ctx := Context(t)
	exp := t0.Add(time.Hour)
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "a", exp, t0), nil)
	wantErr(t, "RevokeAccessToken again", s.RevokeAccessToken(ctx, "a", exp, t0.Add(time.Minute)), nil)
	revs, err := s.Revocations(ctx, t0)
	wantErr(t, "Revocations", err, nil)
	if len(revs) != 1 || revs[0].JTI != "a" {
		t.Errorf("Revocations: %+v, want \"a\" once", revs)
	}
}

// testRevocationsExpiredNotListed: a revocation is listed until the access
// token expires; at its expiry it is not.
func testRevocationsExpiredNotListed(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(time.Hour)
	for _, r := range []store.Revocation{
		{JTI: "expired", ExpiresAt: now.Add(-time.Millisecond)},
		{JTI: "expiring-now", ExpiresAt: now},
		{JTI: "live", ExpiresAt: now.Add(time.Millisecond)},
	} {
		wantErr(t, "RevokeAccessToken "+r.JTI, s.RevokeAccessToken(ctx, r.JTI, r.ExpiresAt, t0), nil)
	}
	revs, err := s.Revocations(ctx, now)
	wantErr(t, "Revocations", err, nil)
	equal(t, "Revocations", normRevocations(t, revs), []store.Revocation{
		{JTI: "live", ExpiresAt: now.Add(time.Millisecond), RevokedAt: t0},
	})
	revs, err = s.Revocations(ctx, t0)
	wantErr(t, "Revocations earlier", err, nil)
	if len(revs) != 3 {
		t.Errorf("Revocations before any expired: %+v, want 3", revs)
	}
}

func testDeleteExpiredNothing(t *testing.T, s store.Store) {
	ctx := Context(t)
	n, err := s.DeleteExpired(ctx, t0)
	wantErr(t, "DeleteExpired of an empty store", err, nil)
	equal(t, "records removed from an empty store", n, int64(0))

	_, first, _ := mustCreateFamily(ctx, t, s, "fam1")
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "x", t0.Add(time.Hour), t0), nil)
	n, err = s.DeleteExpired(ctx, t0)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed", n, int64(0))
	readToken(ctx, t, s, first.Hash)
	if !revokedJTIs(ctx, t, s, t0)["x"] {
		t.Errorf("a live revocation was removed")
	}
}

// testDeleteExpiredRemoves: expired families go with their tokens and
// access-token records; records of expired access tokens and their
// revocations go; everything else stays. A record whose expiry is now has
// expired.
func testDeleteExpiredRemoves(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(40 * 24 * time.Hour)

	// fam1 expires at t0+30d: 1 family, 2 tokens, 2 access-token records.
	_, first1, _ := mustCreateFamily(ctx, t, s, "fam1")
	c1 := child(first1, "fam1/1", t0.Add(time.Hour))
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first1.Hash, c1,
		store.IssuedAccessToken{JTI: "fam1/at1", ExpiresAt: t0.Add(2 * time.Hour)}, t0.Add(time.Hour)), nil)
	// fam2 expires now: 1 family, 1 token, 1 access-token record.
	f2, first2, at2 := family("fam2")
	f2.ExpiresAt = now
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f2, first2, at2), nil)
	// fam3 lives on; its first access token (expired: 1 record) goes, a
	// recent one stays.
	f3, first3, _ := family("fam3")
	f3.ExpiresAt = now.Add(24 * time.Hour)
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f3, first3,
		store.IssuedAccessToken{JTI: "fam3/at0", ExpiresAt: t0.Add(time.Hour)}), nil)
	live := store.IssuedAccessToken{JTI: "fam3/live", ExpiresAt: now.Add(time.Hour)}
	wantErr(t, "RecordAccessToken", s.RecordAccessToken(ctx, "fam3", live), nil)
	// Revocations: 2 expired, 1 live.
	for _, r := range []store.Revocation{
		{JTI: "old", ExpiresAt: t0.Add(time.Hour)},
		{JTI: "expiring-now", ExpiresAt: now},
		{JTI: "recent", ExpiresAt: now.Add(time.Hour)},
	} {
		wantErr(t, "RevokeAccessToken "+r.JTI, s.RevokeAccessToken(ctx, r.JTI, r.ExpiresAt, t0), nil)
	}

	n, err := s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed", n, int64(5+3+1+2))

	for _, h := range [][]byte{first1.Hash, c1.Hash, first2.Hash} {
		_, _, err := s.RefreshToken(ctx, h)
		wantErr(t, "RefreshToken of an expired family", err, store.ErrNotFound)
	}
	wantErr(t, "RevokeRefreshFamily of a removed family", s.RevokeRefreshFamily(ctx, "fam1", now), store.ErrNotFound)
	readToken(ctx, t, s, first3.Hash)
	equal(t, "revocations left", revokedJTIs(ctx, t, s, t0), map[string]bool{"recent": true})

	n, err = s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired again", err, nil)
	equal(t, "records removed again", n, int64(0))

	// fam3 still revokes its live access token.
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam3", now), nil)
	equal(t, "revocations after revoking fam3", revokedJTIs(ctx, t, s, now),
		map[string]bool{"recent": true, "fam3/live": true})
}
