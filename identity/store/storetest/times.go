package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var timeCases = []testCase{
	{"SigningKey", testTimesSigningKey},
	{"User", testTimesUser},
	{"RefreshFamily", testTimesRefreshFamily},
	{"Revocation", testTimesRevocation},
	{"Counter", testTimesCounter},
}

// odd are times that are not whole milliseconds and not in UTC.
var (
	tokyo = time.FixedZone("JST", 9*3600)
	odd1  = time.Date(2031, time.March, 4, 14, 6, 7, 890_123_456, tokyo)
	odd2  = time.Date(2031, time.March, 5, 1, 2, 3, 999_999_999, time.FixedZone("", -7*3600-1800))
	// before the Unix epoch, half a millisecond before a whole one
	odd3 = time.Date(1969, time.December, 31, 23, 59, 59, 999_500_000, tokyo)
)

// sameTime checks that a stored time came back in UTC, within the
// millisecond precision a store promises, and that zero stays zero.
func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s: got %v, want the zero time", what, got)
		}
		return
	}
	if got.Location() != time.UTC {
		t.Errorf("%s: %v is not in UTC", what, got)
	}
	if d := got.Sub(want).Abs(); d >= time.Millisecond {
		t.Errorf("%s: got %v, want %v (off by %v)", what, got, want.UTC(), d)
	}
}

func testTimesSigningKey(t *testing.T, s store.Store) {
	ctx := Context(t)
	k := store.SigningKey{ID: "k", Algorithm: "RS256", Private: []byte("der"),
		Created: odd3, SignFrom: odd1, RetireAt: odd2}
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, k), nil)
	ks, err := s.SigningKeys(ctx)
	wantErr(t, "SigningKeys", err, nil)
	if len(ks) != 1 {
		t.Fatalf("SigningKeys: %+v", ks)
	}
	sameTime(t, "Created", ks[0].Created, k.Created)
	sameTime(t, "SignFrom", ks[0].SignFrom, k.SignFrom)
	sameTime(t, "RetireAt", ks[0].RetireAt, k.RetireAt)
	sameTime(t, "RemoveAt", ks[0].RemoveAt, k.RemoveAt)
}

func testTimesUser(t *testing.T, s store.Store) {
	ctx := Context(t)
	u := user("alice")
	u.Created, u.Updated = odd1, odd2
	wantErr(t, "CreateUser", s.CreateUser(ctx, u), nil)
	got, err := s.User(ctx, "alice")
	wantErr(t, "User", err, nil)
	sameTime(t, "Created", got.Created, u.Created)
	sameTime(t, "Updated", got.Updated, u.Updated)
}

func testTimesRefreshFamily(t *testing.T, s store.Store) {
	ctx := Context(t)
	f, first, at := family("fam1")
	f.AuthTime, f.Created, f.ExpiresAt = odd3, odd1, odd2
	first.IssuedAt, first.ExpiresAt = odd1, odd2
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f, first, at), nil)
	now := odd1.Add(time.Nanosecond)
	c := child(first, "fam1/1", now)
	wantErr(t, "RotateRefreshToken", s.RotateRefreshToken(ctx, first.Hash, c, store.IssuedAccessToken{JTI: "at1", ExpiresAt: odd2}, now), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", odd1), nil)

	gotT, gotF, err := s.RefreshToken(ctx, first.Hash)
	wantErr(t, "RefreshToken", err, nil)
	sameTime(t, "IssuedAt", gotT.IssuedAt, first.IssuedAt)
	sameTime(t, "token ExpiresAt", gotT.ExpiresAt, first.ExpiresAt)
	sameTime(t, "RotatedAt", gotT.RotatedAt, now)
	sameTime(t, "AuthTime", gotF.AuthTime, f.AuthTime)
	sameTime(t, "family Created", gotF.Created, f.Created)
	sameTime(t, "family ExpiresAt", gotF.ExpiresAt, f.ExpiresAt)
	sameTime(t, "RevokedAt", gotF.RevokedAt, odd1)
	gotT, _, err = s.RefreshToken(ctx, c.Hash)
	wantErr(t, "RefreshToken of the child", err, nil)
	sameTime(t, "child RotatedAt", gotT.RotatedAt, time.Time{})
}

func testTimesRevocation(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "a", odd2, odd1), nil)
	revs, err := s.Revocations(ctx, odd1)
	wantErr(t, "Revocations", err, nil)
	if len(revs) != 1 {
		t.Fatalf("Revocations: %+v", revs)
	}
	sameTime(t, "ExpiresAt", revs[0].ExpiresAt, odd2)
	sameTime(t, "RevokedAt", revs[0].RevokedAt, odd1)
}

// testTimesCounter: a counter's times come back within a millisecond, in
// UTC, from Admit and from Counter; the window is measured between them.
func testTimesCounter(t *testing.T, s store.Store) {
	ctx := Context(t)
	lockout := time.Minute + 1500*time.Microsecond
	c, _, err := s.Admit(ctx, "k", odd1, time.Hour, 1, lockout)
	wantErr(t, "Admit", err, nil)
	sameTime(t, "WindowStart from Admit", c.WindowStart, odd1)
	sameTime(t, "LockedUntil from Admit", c.LockedUntil, odd1.Add(lockout))
	c, err = s.Counter(ctx, "k")
	wantErr(t, "Counter", err, nil)
	sameTime(t, "WindowStart", c.WindowStart, odd1)
	sameTime(t, "LockedUntil", c.LockedUntil, odd1.Add(lockout))

	c, _, err = s.Admit(ctx, "k", odd1.Add(time.Hour-2*time.Millisecond), time.Hour, 10, lockout)
	wantErr(t, "Admit within the window", err, nil)
	if c.Count != 2 {
		t.Errorf("Admit within the window: count %d, want 2", c.Count)
	}
	c, _, err = s.Admit(ctx, "k", odd1.Add(time.Hour+time.Millisecond), time.Hour, 10, lockout)
	wantErr(t, "Admit after the window", err, nil)
	if c.Count != 1 {
		t.Errorf("Admit after the window: count %d, want 1", c.Count)
	}
}
