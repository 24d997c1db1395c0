package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var revocationCases = []testCase{
	{"Empty", testRevocationsEmpty},
	{"RevokeAndList", testRevocationsRevokeAndList},
	{"RevokeTwice", testRevocationsRevokeTwice},
	{"ExpiredNotListed", testRevocationsExpiredNotListed},
	{"AccessTokenRevoked", testRevocationsAccessTokenRevoked},
}

var deleteExpiredCases = []testCase{
	{"NothingExpired", testDeleteExpiredNothing},
	{"RemovesExpired", testDeleteExpiredRemoves},
	{"RemovesStaleCounters", testDeleteExpiredCounters},
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

// testRevocationsAccessTokenRevoked: AccessTokenRevoked follows the
// revocations through a sequence of steps, each checked for every JTI: a
// single revocation, the revocation of a family (of its access tokens not
// expired then), and DeleteExpired removing the revocations of expired
// tokens.
func testRevocationsAccessTokenRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1") // fam1/at0 expires at t0+1h
	for _, at := range []store.IssuedAccessToken{
		{JTI: "fam1/at1", ExpiresAt: t0.Add(3 * time.Hour)},
		{JTI: "fam1/short", ExpiresAt: t0.Add(10 * time.Minute)},
	} {
		wantErr(t, "RecordAccessToken "+at.JTI, s.RecordAccessToken(ctx, "fam1", at), nil)
	}
	mustCreateFamily(ctx, t, s, "fam2")

	for _, step := range []struct {
		name string
		do   func() error
		want map[string]bool // every JTI checked; absent ones are not revoked
	}{
		{"before any revocation", nil, nil},
		{
			"after RevokeAccessToken",
			func() error { return s.RevokeAccessToken(ctx, "single", t0.Add(2*time.Hour), t0) },
			map[string]bool{"single": true},
		},
		{
			"after revoking it again",
			func() error { return s.RevokeAccessToken(ctx, "single", t0.Add(2*time.Hour), t0.Add(time.Minute)) },
			map[string]bool{"single": true},
		},
		{
			// fam1/short had expired: it is not revoked.
			"after RevokeRefreshFamily",
			func() error { return s.RevokeRefreshFamily(ctx, "fam1", t0.Add(30*time.Minute)) },
			map[string]bool{"single": true, "fam1/at0": true, "fam1/at1": true},
		},
		{
			// single expires now, fam1/at0 before: their revocations go.
			"after DeleteExpired",
			func() error { _, err := s.DeleteExpired(ctx, t0.Add(2*time.Hour)); return err },
			map[string]bool{"fam1/at1": true},
		},
	} {
		if step.do != nil {
			wantErr(t, step.name, step.do(), nil)
		}
		for _, jti := range []string{"single", "fam1/at0", "fam1/at1", "fam1/short", "fam2/at0", "unknown", "SINGLE"} {
			got, err := s.AccessTokenRevoked(ctx, jti)
			wantErr(t, fmt.Sprintf("%s: AccessTokenRevoked(%q)", step.name, jti), err, nil)
			if got != step.want[jti] {
				t.Errorf("%s: AccessTokenRevoked(%q) = %v, want %v", step.name, jti, got, step.want[jti])
			}
		}
	}
}

// testDeleteExpiredCounters: DeleteExpired removes the counters whose window
// began 24 hours or more before now and which have no lock in force (a lock
// ending now is not), keeps the others, and does not count them.
func testDeleteExpiredCounters(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(48 * time.Hour)
	counters := []struct {
		key     string
		start   time.Time // the counter's one attempt, which begins its window
		lockout time.Duration
		kept    bool
	}{
		{"window-began-24h-ago", now.Add(-24 * time.Hour), 0, false},
		{"window-began-30h-ago", now.Add(-30 * time.Hour), 0, false},
		{"lock-ended", now.Add(-25 * time.Hour), time.Hour, false},
		{"lock-ends-now", now.Add(-25 * time.Hour), 25 * time.Hour, false},
		{"fresh", now.Add(-24*time.Hour + time.Millisecond), 0, true},
		{"fresh-and-locked", now.Add(-time.Hour), 2 * time.Hour, true},
		{"stale-but-locked", now.Add(-25 * time.Hour), 25*time.Hour + time.Millisecond, true},
	}
	before := make([]store.Counter, len(counters))
	for i, tt := range counters {
		limit := 2 // one failure does not lock
		if tt.lockout > 0 {
			limit = 1
		}
		c, _, err := s.Admit(ctx, tt.key, tt.start, time.Hour, limit, tt.lockout)
		wantErr(t, "Admit "+tt.key, err, nil)
		before[i] = normCounter(t, c)
	}
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "expired", now, t0), nil)

	n, err := s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed (the revocation, not the counters)", n, int64(1))
	for i, tt := range counters {
		want := store.Counter{Key: tt.key}
		if tt.kept {
			want = before[i]
		}
		equal(t, "Counter "+tt.key+" after DeleteExpired", readCounter(ctx, t, s, tt.key), want)
	}
}
