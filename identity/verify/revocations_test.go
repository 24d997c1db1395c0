package verify_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// A family's revocation covers every access token carrying its fid, and a
// subject's covers its tokens issued before NotBefore, cached or not.
func TestRevocationKinds(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	token := func(sub, fid string, iat time.Time) string {
		c := f.issuer.Claims(sub, "x")
		c["jti"] = "jti-" + sub + "-" + fid + "-" + iat.Format("150405")
		c["iat"] = iat.Unix()
		if fid != "" {
			c["fid"] = fid
		}
		return verifytest.Sign(f.issuer.Header(), c, f.issuer.Private)
	}
	famTok := token("alice", "fam-1", f.now)
	otherFam := token("alice", "fam-2", f.now)
	oldBob := token("bob", "", f.now.Add(-time.Minute))
	for _, tok := range []string{famTok, otherFam, oldBob} {
		if _, err := f.v.Verify(ctx, tok); err != nil { // now cached
			t.Fatal(err)
		}
	}
	f.revs.add(store.Revocation{FamilyID: "fam-1", ExpiresAt: f.now.Add(time.Hour)})
	f.revs.add(store.Revocation{Subject: "bob", NotBefore: f.now.Add(500 * time.Millisecond), ExpiresAt: f.now.Add(time.Hour)})
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		token   string
		revoked bool
	}{
		"token of the revoked family":           {famTok, true},
		"token of another family":               {otherFam, false},
		"subject's token issued before":         {oldBob, true},
		"subject's token issued in the second":  {token("bob", "", f.now), true},
		"subject's token issued a second after": {token("bob", "", f.now.Add(time.Second)), false},
		"another subject's token issued before": {token("carol", "", f.now.Add(-time.Minute)), false},
	} {
		_, err := f.v.Verify(ctx, tc.token)
		if got := reasonOf(err) == verify.ReasonRevoked; got != tc.revoked || (!tc.revoked && err != nil) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Between full reloads the verifier reads only what was revoked since its
// last read, reaching back by the overlap (a revocation committed late,
// stamped before the last read, is not missed); a reload reads it whole.
func TestRevocationsReadIncrementally(t *testing.T) {
	f := newFixture(t, func(c *verify.Config) {
		c.RevocationReload, c.RevocationOverlap = time.Hour, time.Minute
	})
	ctx := t.Context()
	full, since := f.revs.reads()
	if full != 1 || since != 0 {
		t.Fatalf("New read %d full, %d incremental", full, since)
	}
	late := f.issuer.Token("late", "x")
	f.now = f.now.Add(10 * time.Second)
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	// Committed now, stamped 30 s ago (before the last read), within the
	// overlap.
	f.revs.add(store.Revocation{JTI: "jti-late-x", ExpiresAt: f.now.Add(time.Hour), RevokedAt: f.now.Add(-30 * time.Second)})
	f.now = f.now.Add(5 * time.Second)
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if full, since := f.revs.reads(); full != 1 || since != 2 {
		t.Fatalf("reads: %d full, %d incremental, want 1 and 2", full, since)
	}
	if _, err := f.v.Verify(ctx, late); reasonOf(err) != verify.ReasonRevoked {
		t.Fatalf("a revocation stamped before the last read was missed: %v", err)
	}
	f.now = f.now.Add(time.Hour)
	if err := f.v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if full, _ := f.revs.reads(); full != 2 {
		t.Fatalf("no full reload after RevocationReload: %d full reads", full)
	}
}

// TestRevokedHereShareReads: revocations that wait together share one
// read. While one read is held up, 20 callers of RevokedHere queue; once
// it ends, one more read serves them all, and each sees a revocation
// committed before its call.
func TestRevokedHereShareReads(t *testing.T) {
	f := newFixture(t, func(c *verify.Config) { c.RevocationReload = time.Hour })
	gate := make(chan struct{})
	f.revs.gate = gate
	ctx := t.Context()
	since := f.now // the revocations below are stamped at it
	first := make(chan error, 1)
	go func() { first <- f.v.RevokedHere(ctx, since) }() // the read held up
	for deadline := time.Now().Add(5 * time.Second); verify.ReadsStarted(f.v) < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first read never started")
		}
	}
	toks := make([]string, 20)
	var wg sync.WaitGroup
	for i := range toks {
		toks[i] = f.issuer.Token("u"+strconv.Itoa(i), "x")
		f.revs.add(store.Revocation{JTI: "jti-u" + strconv.Itoa(i) + "-x", ExpiresAt: f.now.Add(time.Hour)})
		wg.Go(func() {
			if err := f.v.RevokedHere(ctx, since); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // the callers queue behind the read held up
	close(gate)                        // every read from now on passes
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, since := f.revs.reads(); since > 3 {
		t.Errorf("%d incremental reads for 21 revocations waiting together, want 2 (3 if a caller came late)", since)
	}
	for i, tok := range toks {
		if _, err := f.v.Verify(ctx, tok); reasonOf(err) != verify.ReasonRevoked {
			t.Errorf("revocation %d not applied: %v", i, err)
		}
	}
}

// TestRevokedHereFindsALateCommit: a revocation stamped before it was
// committed, with a read between the stamp and the commit (a write that
// waited for the store's one writer while the poll ran), is applied by
// RevokedHere, which reads from the stamp; and a read that failed, here
// another caller's, is not taken as serving the next caller. (With a
// read back two seconds from the last read the first was missed.)
func TestRevokedHereFindsALateCommit(t *testing.T) {
	f := newFixture(t, func(c *verify.Config) { c.RevocationReload = time.Hour })
	ctx := t.Context()
	tok := f.issuer.Token("late", "x")
	stamp := f.now
	f.now = f.now.Add(2500 * time.Millisecond)
	if err := f.v.RefreshRevocations(ctx); err != nil { // the poll, before the commit
		t.Fatal(err)
	}
	f.now = f.now.Add(500 * time.Millisecond)
	f.revs.add(store.Revocation{JTI: "jti-late-x", ExpiresAt: f.now.Add(time.Hour), RevokedAt: stamp}) // the commit
	f.revs.fail(errors.New("the store is away"))
	if err := f.v.RevokedHere(ctx, stamp); err == nil {
		t.Fatal("a failed read reported success")
	}
	f.revs.fail(nil)
	if err := f.v.RevokedHere(ctx, stamp); err != nil {
		t.Fatalf("the read after a failed one: %v", err)
	}
	if _, err := f.v.Verify(ctx, tok); reasonOf(err) != verify.ReasonRevoked {
		t.Fatalf("a revocation committed after a read later than its stamp was missed: %v", err)
	}
}
