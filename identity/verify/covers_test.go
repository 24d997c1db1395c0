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
