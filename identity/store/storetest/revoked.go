package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// accessToken is what AccessTokenRevoked is asked about an access token.
type accessToken struct {
	jti, familyID, subject string
	iat                    time.Time
}

// testRevocationsAccessTokenRevoked: AccessTokenRevoked follows the
// revocations of each kind through a sequence of steps, each checked for
// every token: by jti (exactly), by family (an empty family never
// matches), by subject for a token issued before NotBefore (not at it or
// after), and DeleteExpired removing the revocations that have expired.
func testRevocationsAccessTokenRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	mustCreateFamily(ctx, t, s, "fam1")
	mustCreateFamily(ctx, t, s, "fam2")
	notBefore := t0.Add(time.Hour)
	tokens := map[string]accessToken{
		"single":          {"single", "", "carol", t0},
		"SINGLE":          {"SINGLE", "", "carol", t0},
		"of fam1":         {"f1", "fam1", "subject-fam1", t0},
		"of fam2":         {"f2", "fam2", "subject-fam2", t0},
		"of no family":    {"nf", "", "subject-fam1", t0},
		"no jti":          {"", "fam2", "subject-fam2", t0},
		"no subject":      {"ns", "fam2", "", t0},
		"bob's, before":   {"b1", "", "bob", notBefore.Add(-time.Millisecond)},
		"bob's, at":       {"b2", "", "bob", notBefore},
		"bob's, after":    {"b3", "", "bob", notBefore.Add(time.Millisecond)},
		"BOB's, before":   {"b4", "", "BOB", notBefore.Add(-time.Millisecond)},
		"bob's, long ago": {"b5", "fam2", "bob", t0.Add(-24 * time.Hour)},
	}
	for _, step := range []struct {
		name string
		do   func() error
		want map[string]bool // every token checked; absent ones are not revoked
	}{
		{"before any revocation", nil, nil},
		{
			"after RevokeAccessToken",
			func() error { return s.RevokeAccessToken(ctx, "single", t0.Add(2*time.Hour), t0) },
			map[string]bool{"single": true},
		},
		{
			"after RevokeRefreshFamily",
			func() error { return s.RevokeRefreshFamily(ctx, "fam1", t0.Add(30*time.Minute), t0.Add(3*time.Hour)) },
			map[string]bool{"single": true, "of fam1": true},
		},
		{
			"after RevokeSubject",
			func() error { return s.RevokeSubject(ctx, "bob", notBefore, t0.Add(90*time.Minute)) },
			map[string]bool{"single": true, "of fam1": true, "bob's, before": true, "bob's, long ago": true},
		},
		{
			// single's revocation expires now, bob's before: they go.
			"after DeleteExpired",
			func() error { _, err := s.DeleteExpired(ctx, t0.Add(2*time.Hour)); return err },
			map[string]bool{"of fam1": true},
		},
		{
			"after DeleteExpired at the family's revocation's expiry",
			func() error { _, err := s.DeleteExpired(ctx, t0.Add(3*time.Hour)); return err },
			nil,
		},
	} {
		if step.do != nil {
			wantErr(t, step.name, step.do(), nil)
		}
		for name, at := range tokens {
			got, err := s.AccessTokenRevoked(ctx, at.jti, at.familyID, at.subject, at.iat)
			wantErr(t, step.name+": AccessTokenRevoked of "+name, err, nil)
			if got != step.want[name] {
				t.Errorf("%s: AccessTokenRevoked of the token %s %+v = %v, want %v", step.name, name, at, got, step.want[name])
			}
		}
	}
}
