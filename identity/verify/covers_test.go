package verify

import (
	"testing"
	"time"
)

// TestSubjectRevocationCoversByAuthTime: a subject's revocation covers a
// token issued after it whose authentication (auth_time) came before it: a
// login that was checking the old password as the password changed. A token
// of a later authentication, or without auth_time issued later, is not
// covered.
func TestSubjectRevocationCoversByAuthTime(t *testing.T) {
	nbf := time.Unix(1_000_000, 0)
	set := newRevocationSet()
	set.subjects["bob"] = nbf
	cases := []struct {
		name    string
		id      Identity
		covered bool
	}{
		{"issued after, authenticated before", Identity{Subject: "bob", IssuedAt: nbf.Add(time.Second), AuthTime: nbf.Add(-time.Second)}, true},
		{"issued and authenticated after", Identity{Subject: "bob", IssuedAt: nbf.Add(2 * time.Second), AuthTime: nbf.Add(time.Second)}, false},
		{"issued after, no auth_time", Identity{Subject: "bob", IssuedAt: nbf.Add(time.Second)}, false},
		{"issued before", Identity{Subject: "bob", IssuedAt: nbf.Add(-time.Second)}, true},
		{"another subject", Identity{Subject: "alice", IssuedAt: nbf.Add(time.Second), AuthTime: nbf.Add(-time.Second)}, false},
	}
	for i := range cases {
		tt := &cases[i]
		if got := set.covers(&tt.id); got != tt.covered {
			t.Errorf("%s: covered %t, want %t", tt.name, got, tt.covered)
		}
	}
}

// TestLastReadServes: a read that ended serves a waiting caller only when
// it started after the call, succeeded (a failed one's error may be its
// own caller's context), and listed the revocations from the caller's
// stamp on, or all of them.
func TestLastReadServes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tt := range []struct {
		last lastRead
		need uint64
		from time.Time
		want bool
	}{
		{lastRead{n: 5, ok: true, from: t0}, 5, t0, true},
		{lastRead{n: 6, ok: true, from: t0.Add(-time.Minute)}, 5, t0, true},
		{lastRead{n: 4, ok: true, from: t0}, 5, t0, false},                           // started before the call
		{lastRead{n: 5, ok: false, from: t0}, 5, t0, false},                          // failed
		{lastRead{n: 5, ok: true, from: t0.Add(time.Second)}, 5, t0, false},          // not back to the stamp
		{lastRead{n: 5, ok: true, full: true, from: t0.Add(time.Hour)}, 5, t0, true}, // a full read lists all
	} {
		if got := tt.last.serves(tt.need, tt.from); got != tt.want {
			t.Errorf("%+v serves need %d from %v: %v, want %v", tt.last, tt.need, tt.from, got, tt.want)
		}
	}
}
