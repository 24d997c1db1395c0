package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var revocationCases = []testCase{
	{"Empty", testRevocationsEmpty},
	{"Kinds", testRevocationsKinds},
	{"OldestFirst", testRevocationsOldestFirst},
	{"RevokeTwice", testRevocationsRevokeTwice},
	{"ExpiredNotListed", testRevocationsExpiredNotListed},
	{"Since", testRevocationsSince},
	{"RevokeSubject", testRevocationsRevokeSubject},
	{"RevokeSubjectAgain", testRevocationsRevokeSubjectAgain},
	{"RevokeSubjectWithNothing", testRevocationsRevokeSubjectWithNothing},
	{"AccessTokenRevoked", testRevocationsAccessTokenRevoked},
}

// createFamilyOf creates the family id of subject.
func createFamilyOf(ctx context.Context, t *testing.T, s store.Store, id, subject string) store.RefreshFamily {
	t.Helper()
	f := family(id)
	f.Subject = subject
	wantErr(t, "CreateRefreshFamily "+id, s.CreateRefreshFamily(ctx, f, store.FamilyBound{}), nil)
	return f
}

// revoke records r with the method of its kind: RevokeAccessToken,
// RevokeRefreshFamily (of a family that exists) or RevokeSubject (whose
// NotBefore is its RevokedAt).
func revoke(ctx context.Context, t *testing.T, s store.Store, r store.Revocation) {
	t.Helper()
	switch {
	case r.JTI != "":
		wantErr(t, "RevokeAccessToken "+r.JTI, s.RevokeAccessToken(ctx, r.JTI, r.ExpiresAt, r.RevokedAt), nil)
	case r.FamilyID != "":
		wantErr(t, "RevokeRefreshFamily "+r.FamilyID, s.RevokeRefreshFamily(ctx, r.FamilyID, r.RevokedAt, r.ExpiresAt), nil)
	default:
		wantErr(t, "RevokeSubject "+r.Subject, s.RevokeSubject(ctx, r.Subject, r.RevokedAt, r.ExpiresAt), nil)
	}
}

func testRevocationsEmpty(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	equal(t, "Revocations of a store with nothing revoked", revocations(ctx, t, s, t0), nil)
	equal(t, "RevocationsSince of a store with nothing revoked", revocationsSince(ctx, t, s, time.Time{}, t0), nil)
}

// testRevocationsKinds: each kind of revocation reads back exactly, with
// the one field that names what it revokes, and NotBefore for a subject.
func testRevocationsKinds(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	want := []store.Revocation{
		{JTI: "a", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0.Add(-3 * time.Minute)},
		{FamilyID: "fam1", ExpiresAt: t0.Add(2 * time.Hour), RevokedAt: t0.Add(-2 * time.Minute)},
		{Subject: "bob", NotBefore: t0.Add(-time.Minute), ExpiresAt: t0.Add(3 * time.Hour), RevokedAt: t0.Add(-time.Minute)},
	}
	for _, r := range want {
		revoke(ctx, t, s, r)
	}
	equal(t, "Revocations", revocations(ctx, t, s, t0), want)
	equal(t, "RevocationsSince the start", revocationsSince(ctx, t, s, time.Time{}, t0), want)
}

// testRevocationsOldestFirst: revocations of every kind, recorded in
// another order, are listed oldest revocation first.
func testRevocationsOldestFirst(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	mustCreateFamily(ctx, t, s, "fam2")
	want := []store.Revocation{
		{FamilyID: "fam1", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0.Add(-5 * time.Minute)},
		{JTI: "b", ExpiresAt: t0.Add(30 * time.Minute), RevokedAt: t0.Add(-4 * time.Minute)},
		{JTI: "a", ExpiresAt: t0.Add(2 * time.Hour), RevokedAt: t0.Add(-3 * time.Minute)},
		{FamilyID: "fam2", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0.Add(-2 * time.Minute)},
		{Subject: "bob", NotBefore: t0.Add(-time.Minute), ExpiresAt: t0.Add(time.Hour), RevokedAt: t0.Add(-time.Minute)},
		{JTI: "c", ExpiresAt: t0.Add(time.Hour), RevokedAt: t0},
	}
	for _, i := range []int{4, 2, 0, 5, 1, 3} {
		revoke(ctx, t, s, want[i])
	}
	// Listed as stored: normRevocations would reorder those revoked at the
	// same time, and none are.
	revs, err := s.Revocations(ctx, t0)
	wantErr(t, "Revocations", err, nil)
	for i := range revs {
		revs[i].NotBefore = utc(t, "NotBefore", revs[i].NotBefore)
		revs[i].ExpiresAt = utc(t, "ExpiresAt", revs[i].ExpiresAt)
		revs[i].RevokedAt = utc(t, "RevokedAt", revs[i].RevokedAt)
	}
	equal(t, "Revocations, oldest first", list(revs), want)
	equal(t, "RevocationsSince the start, oldest first", revocationsSince(ctx, t, s, time.Time{}, t0), want)
}

func testRevocationsRevokeTwice(t *testing.T, s store.Store) {
	ctx := Context(t)
	exp := t0.Add(time.Hour)
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "a", exp, t0), nil)
	wantErr(t, "RevokeAccessToken again", s.RevokeAccessToken(ctx, "a", exp, t0.Add(time.Minute)), nil)
	equal(t, "Revocations", revocations(ctx, t, s, t0), []store.Revocation{
		{JTI: "a", ExpiresAt: exp, RevokedAt: t0},
	})
}

// testRevocationsExpiredNotListed: a revocation of each kind is listed
// until its expiry; at its expiry it is not, by Revocations or by
// RevocationsSince.
func testRevocationsExpiredNotListed(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(time.Hour)
	var all, live []store.Revocation
	for _, e := range []struct {
		name string
		exp  time.Time
	}{
		{"expired", now.Add(-time.Millisecond)},
		{"expiring-now", now},
		{"live", now.Add(time.Millisecond)},
	} {
		mustCreateFamily(ctx, t, s, "fam-"+e.name)
		for _, r := range []store.Revocation{
			{JTI: "jti-" + e.name, ExpiresAt: e.exp, RevokedAt: t0},
			{FamilyID: "fam-" + e.name, ExpiresAt: e.exp, RevokedAt: t0},
			{Subject: "sub-" + e.name, NotBefore: t0, ExpiresAt: e.exp, RevokedAt: t0},
		} {
			revoke(ctx, t, s, r)
			all = append(all, r)
			if e.name == "live" {
				live = append(live, r)
			}
		}
	}
	live = normRevocations(t, live)
	equal(t, "Revocations", revocations(ctx, t, s, now), live)
	equal(t, "RevocationsSince", revocationsSince(ctx, t, s, t0, now), live)
	equal(t, "Revocations before any expired", revocations(ctx, t, s, t0), normRevocations(t, all))
}

// testRevocationsSince: RevocationsSince lists the revocations of every
// kind revoked at since or later, to the millisecond, that have not
// expired.
func testRevocationsSince(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(time.Hour)
	var all []store.Revocation
	for _, d := range []time.Duration{-time.Millisecond, 0, time.Millisecond} {
		at := t0.Add(d)
		name := fmt.Sprintf("t0%+dms", d.Milliseconds())
		mustCreateFamily(ctx, t, s, "fam-"+name)
		for _, r := range []store.Revocation{
			{JTI: "jti-" + name, ExpiresAt: now.Add(time.Hour), RevokedAt: at},
			{FamilyID: "fam-" + name, ExpiresAt: now.Add(time.Hour), RevokedAt: at},
			{Subject: "sub-" + name, NotBefore: at, ExpiresAt: now.Add(time.Hour), RevokedAt: at},
		} {
			revoke(ctx, t, s, r)
			all = append(all, r)
		}
	}
	all = normRevocations(t, all) // t0-1ms first, then t0, then t0+1ms
	// Recent but expired at now: never listed.
	revoke(ctx, t, s, store.Revocation{JTI: "jti-expired", ExpiresAt: now, RevokedAt: t0.Add(time.Millisecond)})
	for _, tt := range []struct {
		name  string
		since time.Time
		want  []store.Revocation
	}{
		{"ZeroTime", time.Time{}, all},
		{"Before", t0.Add(-time.Minute), all},
		{"AtFirst", t0.Add(-time.Millisecond), all},
		{"AtSecond", t0, all[3:]},
		{"AtLast", t0.Add(time.Millisecond), all[6:]},
		{"AfterLast", t0.Add(2 * time.Millisecond), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			equal(t, "RevocationsSince", revocationsSince(ctx, t, s, tt.since, now), list(tt.want))
		})
	}
}

// testRevocationsRevokeSubject: RevokeSubject revokes the subject's live
// families at now, each with a family revocation until tokensUntil, leaves
// a family revoked before as it was and other subjects' families alone,
// and records the subject's NotBefore.
func testRevocationsRevokeSubject(t *testing.T, s store.Store) {
	ctx := Context(t)
	a1 := mustRotate(ctx, t, s, createFamilyOf(ctx, t, s, "a1", "alice"), t0.Add(time.Minute))
	a2 := createFamilyOf(ctx, t, s, "a2", "alice")
	a3 := createFamilyOf(ctx, t, s, "a3", "alice")
	a3Revoked := store.Revocation{FamilyID: "a3", ExpiresAt: t0.Add(2 * time.Hour), RevokedAt: t0.Add(10 * time.Minute)}
	revoke(ctx, t, s, a3Revoked)
	a3.RevokedAt = a3Revoked.RevokedAt
	b1 := createFamilyOf(ctx, t, s, "b1", "bob")
	lookalike := createFamilyOf(ctx, t, s, "A1", "Alice")

	now, until := t0.Add(time.Hour), t0.Add(3*time.Hour)
	wantErr(t, "RevokeSubject", s.RevokeSubject(ctx, "alice", now, until), nil)

	a1.RevokedAt, a2.RevokedAt = now, now
	for _, f := range []store.RefreshFamily{a1, a2, a3, b1, lookalike} {
		checkFamily(ctx, t, s, "family "+f.ID, f)
	}
	equal(t, "Revocations", revocations(ctx, t, s, now), []store.Revocation{
		a3Revoked,
		{FamilyID: "a1", ExpiresAt: until, RevokedAt: now},
		{FamilyID: "a2", ExpiresAt: until, RevokedAt: now},
		{Subject: "alice", NotBefore: now, ExpiresAt: until, RevokedAt: now},
	})
	err := s.RotateRefreshFamily(ctx, a2.ID, 1, hash("next"), now.Add(tokenLife), now)
	wantErr(t, "RotateRefreshFamily of a family of the revoked subject", err, store.ErrFamilyRevoked)
}

// subjectRevocation is the one revocation of subject listed at now.
func subjectRevocation(ctx context.Context, t *testing.T, s store.Store, subject string, now time.Time) store.Revocation {
	t.Helper()
	var found []store.Revocation
	for _, r := range revocations(ctx, t, s, now) {
		if r.Subject == subject {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("revocations of subject %q: %+v, want one", subject, found)
	}
	return found[0]
}

// testRevocationsRevokeSubjectAgain: revoking a subject again revokes the
// families it has gained, and moves its NotBefore and expiry on, never
// back; a move is listed by RevocationsSince from its time, so that a
// verifier reading incrementally learns of it.
func testRevocationsRevokeSubjectAgain(t *testing.T, s store.Store) {
	ctx := Context(t)
	for _, step := range []struct {
		name           string
		now, until     time.Time
		newFamily      bool      // a family of alice is created before the step
		wantNotBefore  time.Time // after the step
		wantExpiresAt  time.Time
		listedSinceNow bool // RevocationsSince(now) lists alice's revocation
	}{
		{"First", t0.Add(time.Hour), t0.Add(3 * time.Hour), true, t0.Add(time.Hour), t0.Add(3 * time.Hour), true},
		{"Later", t0.Add(2 * time.Hour), t0.Add(5 * time.Hour), true, t0.Add(2 * time.Hour), t0.Add(5 * time.Hour), true},
		{"Earlier", t0.Add(90 * time.Minute), t0.Add(4 * time.Hour), false, t0.Add(2 * time.Hour), t0.Add(5 * time.Hour), false},
		{"LaterButShorter", t0.Add(3 * time.Hour), t0.Add(4 * time.Hour), false, t0.Add(3 * time.Hour), t0.Add(5 * time.Hour), true},
	} {
		var f store.RefreshFamily
		if step.newFamily {
			f = createFamilyOf(ctx, t, s, "fam-"+step.name, "alice")
		}
		wantErr(t, step.name+": RevokeSubject", s.RevokeSubject(ctx, "alice", step.now, step.until), nil)
		r := subjectRevocation(ctx, t, s, "alice", step.now)
		equal(t, step.name+": NotBefore", r.NotBefore, step.wantNotBefore)
		equal(t, step.name+": ExpiresAt", r.ExpiresAt, step.wantExpiresAt)
		if step.newFamily {
			f.RevokedAt = step.now
			checkFamily(ctx, t, s, step.name+": new family", f)
		}
		if step.listedSinceNow {
			var listed bool
			for _, r := range revocationsSince(ctx, t, s, step.now, step.now) {
				listed = listed || r.Subject == "alice"
			}
			if !listed {
				t.Errorf("%s: RevocationsSince(now) does not list the moved revocation of alice", step.name)
			}
		}
		for _, iat := range []time.Time{step.wantNotBefore.Add(-time.Millisecond), step.wantNotBefore} {
			got, err := s.AccessTokenRevoked(ctx, "jti", "", "alice", iat)
			wantErr(t, step.name+": AccessTokenRevoked", err, nil)
			if want := iat.Before(step.wantNotBefore); got != want {
				t.Errorf("%s: AccessTokenRevoked of a token of alice issued at %v = %v, want %v", step.name, iat, got, want)
			}
		}
	}
}

// testRevocationsRevokeSubjectWithNothing: a subject with no family is
// revoked all the same (its access tokens may have been issued without
// one), and nothing else changes.
func testRevocationsRevokeSubjectWithNothing(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := mustCreateFamily(ctx, t, s, "fam1")
	now, until := t0.Add(time.Hour), t0.Add(2*time.Hour)
	wantErr(t, "RevokeSubject", s.RevokeSubject(ctx, "nobody", now, until), nil)
	equal(t, "Revocations", revocations(ctx, t, s, now), []store.Revocation{
		{Subject: "nobody", NotBefore: now, ExpiresAt: until, RevokedAt: now},
	})
	checkFamily(ctx, t, s, "other subject's family", f)
}
