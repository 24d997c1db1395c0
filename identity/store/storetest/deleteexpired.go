package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var deleteExpiredCases = []testCase{
	{"NothingExpired", testDeleteExpiredNothing},
	{"RemovesExpired", testDeleteExpiredRemoves},
	{"RemovesExpiredLegacy", testDeleteExpiredLegacy},
	{"RemovesStaleCounters", testDeleteExpiredCounters},
}

// testDeleteExpiredNothing: with nothing expired, DeleteExpired removes
// nothing: no family, and no revocation of any kind.
func testDeleteExpiredNothing(t *testing.T, s store.Store) {
	ctx := Context(t)
	n, err := s.DeleteExpired(ctx, t0)
	wantErr(t, "DeleteExpired of an empty store", err, nil)
	equal(t, "records removed from an empty store", n, int64(0))

	f := mustRotate(ctx, t, s, mustCreateFamily(ctx, t, s, "fam1"), t0)
	mustCreateFamily(ctx, t, s, "fam2")
	for _, r := range []store.Revocation{
		{JTI: "x", ExpiresAt: t0.Add(time.Millisecond), RevokedAt: t0},
		{FamilyID: "fam2", ExpiresAt: t0.Add(time.Millisecond), RevokedAt: t0},
		{Subject: "bob", NotBefore: t0, ExpiresAt: t0.Add(time.Millisecond), RevokedAt: t0},
	} {
		revoke(ctx, t, s, r)
	}
	before := revocations(ctx, t, s, t0)
	n, err = s.DeleteExpired(ctx, t0)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed", n, int64(0))
	checkFamily(ctx, t, s, "family", f)
	equal(t, "revocations", revocations(ctx, t, s, t0), before)
}

// testDeleteExpiredRemoves: families past their absolute expiry go, and
// so do the revocations of each kind that have expired; each is one
// record; everything else stays. A record whose expiry is now has expired.
func testDeleteExpiredRemoves(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(40 * 24 * time.Hour)
	far := now.Add(24 * time.Hour)

	// Families: fam1 (rotated) and fam2 expired, 2 records.
	f1 := mustCreateFamily(ctx, t, s, "fam1") // expires at t0+30d
	for i := range 3 {
		f1 = mustRotate(ctx, t, s, f1, t0.Add(time.Duration(i+1)*time.Hour))
	}
	f2 := family("fam2")
	f2.ExpiresAt = now
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f2, store.FamilyBound{}), nil)
	kept := make(map[string]store.RefreshFamily)
	for _, id := range []string{"fam3", "fam4", "fam5"} {
		f := family(id)
		f.ExpiresAt = far
		wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f, store.FamilyBound{}), nil)
		kept[id] = f
	}
	// Revocations: 5 expired, 3 live.
	for _, r := range []store.Revocation{
		{JTI: "old", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0},
		{JTI: "expiring-now", ExpiresAt: now, RevokedAt: t0},
		{JTI: "recent", ExpiresAt: now.Add(time.Hour), RevokedAt: t0},
		{FamilyID: "fam4", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0},
		{FamilyID: "fam5", ExpiresAt: now.Add(time.Hour), RevokedAt: t0},
		{Subject: "gone", NotBefore: t0, ExpiresAt: t0.Add(time.Hour), RevokedAt: t0},
		{Subject: "expiring-now", NotBefore: t0, ExpiresAt: now, RevokedAt: t0},
		{Subject: "kept", NotBefore: t0, ExpiresAt: now.Add(time.Hour), RevokedAt: t0},
	} {
		revoke(ctx, t, s, r)
		if r.FamilyID != "" {
			f := kept[r.FamilyID]
			f.RevokedAt = r.RevokedAt
			kept[r.FamilyID] = f
		}
	}

	n, err := s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed", n, int64(2+5))

	for _, id := range []string{"fam1", "fam2"} {
		_, err := s.RefreshFamily(ctx, id)
		wantErr(t, "RefreshFamily of the expired family "+id, err, store.ErrNotFound)
	}
	wantErr(t, "RevokeRefreshFamily of a removed family", s.RevokeRefreshFamily(ctx, "fam1", now, far), store.ErrNotFound)
	for id, f := range kept {
		checkFamily(ctx, t, s, "family "+id, f)
	}
	// Listed at t0, when none had expired: only the live ones are left.
	equal(t, "revocations left", revokedKeys(ctx, t, s, t0),
		map[string]bool{"jti:recent": true, "family:fam5": true, "subject:kept": true})
	for _, tt := range []struct {
		jti, familyID, subject string
		want                   bool
	}{
		{"old", "", "", false},
		{"recent", "", "", true},
		{"x", "fam4", "", false},
		{"x", "fam5", "", true},
		{"x", "", "gone", false},
		{"x", "", "kept", true},
	} {
		got, err := s.AccessTokenRevoked(ctx, tt.jti, tt.familyID, tt.subject, t0.Add(-time.Millisecond))
		wantErr(t, "AccessTokenRevoked", err, nil)
		if got != tt.want {
			t.Errorf("AccessTokenRevoked(%q, %q, %q) after DeleteExpired = %v, want %v", tt.jti, tt.familyID, tt.subject, got, tt.want)
		}
	}

	n, err = s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired again", err, nil)
	equal(t, "records removed again", n, int64(0))
}

// testDeleteExpiredLegacy: a legacy family past its absolute expiry goes
// with its tokens and its recorded access tokens, converted or not; the
// records of expired access tokens of a live legacy family go, the rest
// of it stays, and its revocation still revokes its live access tokens.
func testDeleteExpiredLegacy(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	now := t0.Add(40 * 24 * time.Hour)

	// 1 family, 2 tokens, 2 access tokens.
	l1 := legacyFamily("legacy1") // expires at t0+30d
	mustSeed(ctx, t, ls, l1)
	// The same, converted.
	l2 := legacyFamily("legacy2")
	l2.family.ExpiresAt = now
	mustSeed(ctx, t, ls, l2)
	mustConvert(ctx, t, s, l2, t0.Add(90*time.Minute))
	// Lives on: its 2 access tokens of t0 go, a recent one stays.
	l3 := legacyFamily("legacy3")
	l3.family.ExpiresAt = now.Add(24 * time.Hour)
	live := store.IssuedAccessToken{JTI: "legacy3/live", ExpiresAt: now.Add(time.Hour)}
	l3.ats = append(l3.ats, live)
	mustSeed(ctx, t, ls, l3)

	n, err := s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "records removed", n, int64(5+5+2))

	for _, l := range []legacy{l1, l2} {
		for _, tok := range l.tokens {
			_, _, err := s.LegacyRefreshToken(ctx, tok.Hash)
			wantErr(t, "LegacyRefreshToken of an expired family's token", err, store.ErrNotFound)
		}
		_, err := s.RefreshFamily(ctx, l.family.ID)
		wantErr(t, "RefreshFamily of an expired family", err, store.ErrNotFound)
	}
	checkLegacy(ctx, t, s, "live legacy family", l3)

	n, err = s.DeleteExpired(ctx, now)
	wantErr(t, "DeleteExpired again", err, nil)
	equal(t, "records removed again", n, int64(0))
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, l3.family.ID, now, now.Add(time.Hour)), nil)
	equal(t, "revocations of the live legacy family", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: l3.family.ID, ExpiresAt: now.Add(time.Hour), RevokedAt: now},
		{JTI: live.JTI, ExpiresAt: live.ExpiresAt, RevokedAt: now},
	})
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
