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
	{"LegacyFamily", testTimesLegacyFamily},
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

// testTimesRefreshFamily: a family's times come back within a
// millisecond, in UTC, after its creation, a rotation and its revocation;
// a new family's RotatedAt stays zero.
func testTimesRefreshFamily(t *testing.T, s store.Store) {
	ctx := Context(t)
	f := family("fam1")
	f.AuthTime, f.Created, f.ExpiresAt, f.CurrentExpiresAt = odd3, odd1, odd2, odd2
	wantErr(t, "CreateRefreshFamily", s.CreateRefreshFamily(ctx, f, store.FamilyBound{}), nil)
	got, err := s.RefreshFamily(ctx, "fam1")
	wantErr(t, "RefreshFamily", err, nil)
	sameTime(t, "new family's CurrentExpiresAt", got.CurrentExpiresAt, odd2)
	sameTime(t, "new family's RotatedAt", got.RotatedAt, time.Time{})
	sameTime(t, "new family's RevokedAt", got.RevokedAt, time.Time{})

	now := odd1.Add(time.Nanosecond)
	wantErr(t, "RotateRefreshFamily", s.RotateRefreshFamily(ctx, "fam1", 1, gen("fam1", 2), odd3, now), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", odd1, odd2), nil)
	got, err = s.RefreshFamily(ctx, "fam1")
	wantErr(t, "RefreshFamily", err, nil)
	sameTime(t, "AuthTime", got.AuthTime, f.AuthTime)
	sameTime(t, "Created", got.Created, f.Created)
	sameTime(t, "ExpiresAt", got.ExpiresAt, f.ExpiresAt)
	sameTime(t, "CurrentExpiresAt", got.CurrentExpiresAt, odd3)
	sameTime(t, "RotatedAt", got.RotatedAt, now)
	sameTime(t, "RevokedAt", got.RevokedAt, odd1)
}

// testTimesLegacyFamily: a legacy family's and its tokens' times come
// back within a millisecond, in UTC, before and after its conversion.
func testTimesLegacyFamily(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l := legacyFamily("fam1")
	l.family.AuthTime, l.family.Created, l.family.ExpiresAt = odd3, odd1, odd2
	l.tokens[0].IssuedAt, l.tokens[0].ExpiresAt, l.tokens[0].RotatedAt = odd3, odd2, odd1
	l.tokens[1].IssuedAt, l.tokens[1].ExpiresAt = odd1, odd2
	mustSeed(ctx, t, ls, l)
	now := odd1.Add(time.Nanosecond)
	wantErr(t, "ConvertLegacyFamily", s.ConvertLegacyFamily(ctx, l.tokens[1].Hash, []byte("salt"), gen("fam1", 2), odd3, now), nil)

	first, f, err := s.LegacyRefreshToken(ctx, l.tokens[0].Hash)
	wantErr(t, "LegacyRefreshToken", err, nil)
	sameTime(t, "IssuedAt", first.IssuedAt, odd3)
	sameTime(t, "ExpiresAt", first.ExpiresAt, odd2)
	sameTime(t, "RotatedAt", first.RotatedAt, odd1)
	sameTime(t, "family AuthTime", f.AuthTime, odd3)
	sameTime(t, "family Created", f.Created, odd1)
	sameTime(t, "family ExpiresAt", f.ExpiresAt, odd2)
	sameTime(t, "family CurrentExpiresAt", f.CurrentExpiresAt, odd3)
	sameTime(t, "family RotatedAt", f.RotatedAt, now)
	sameTime(t, "family RevokedAt", f.RevokedAt, time.Time{})
	second, _, err := s.LegacyRefreshToken(ctx, l.tokens[1].Hash)
	wantErr(t, "LegacyRefreshToken", err, nil)
	sameTime(t, "converted token's IssuedAt", second.IssuedAt, odd1)
	sameTime(t, "converted token's RotatedAt", second.RotatedAt, now)
}

// testTimesRevocation: the times of each kind of revocation come back
// within a millisecond, in UTC; RevocationsSince lists those revoked at
// since exactly; a subject's token issued at NotBefore is not revoked,
// one issued a millisecond earlier is.
func testTimesRevocation(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	wantErr(t, "RevokeAccessToken", s.RevokeAccessToken(ctx, "a", odd2, odd1), nil)
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "fam1", odd1, odd2), nil)
	wantErr(t, "RevokeSubject", s.RevokeSubject(ctx, "bob", odd1, odd2), nil)
	for _, list := range []struct {
		name string
		get  func() ([]store.Revocation, error)
	}{
		{"Revocations", func() ([]store.Revocation, error) { return s.Revocations(ctx, odd1) }},
		{"RevocationsSince", func() ([]store.Revocation, error) { return s.RevocationsSince(ctx, odd1, odd1) }},
	} {
		revs, err := list.get()
		wantErr(t, list.name, err, nil)
		if len(revs) != 3 {
			t.Fatalf("%s: %+v, want 3", list.name, revs)
		}
		for _, r := range revs {
			what := list.name + ": " + revocationKey(r)
			sameTime(t, what+" ExpiresAt", r.ExpiresAt, odd2)
			sameTime(t, what+" RevokedAt", r.RevokedAt, odd1)
			if r.Subject != "" {
				sameTime(t, what+" NotBefore", r.NotBefore, odd1)
			} else {
				sameTime(t, what+" NotBefore", r.NotBefore, time.Time{})
			}
		}
	}
	for _, tt := range []struct {
		iat  time.Time
		want bool
	}{{odd1.Add(-time.Millisecond), true}, {odd1, false}, {odd1.Add(time.Millisecond), false}} {
		got, err := s.AccessTokenRevoked(ctx, "b", "", "bob", tt.iat)
		wantErr(t, "AccessTokenRevoked", err, nil)
		if got != tt.want {
			t.Errorf("AccessTokenRevoked of a token of bob issued at %v, NotBefore %v: %v, want %v", tt.iat, odd1, got, tt.want)
		}
	}
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
