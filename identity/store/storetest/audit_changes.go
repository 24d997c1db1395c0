package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

var auditChangeCases = []testCase{
	{"ChangesWithTheirChange", testAuditChangesWithTheirChange},
	{"ChangesNotOnFailure", testAuditChangesNotOnFailure},
	{"ChangesClaims", testAuditChangesClaims},
	{"ChangesConcurrentClaims", testAuditChangesConcurrentClaims},
}

// withChange is ctx carrying a pending change of action, made at made.
func withChange(ctx context.Context, id, action string, made time.Time) (context.Context, *store.AuditChange) {
	c := &store.AuditChange{ID: id, Time: made, Action: action}
	return store.WithAuditChange(ctx, c), c
}

// claimAll claims every change claimable at now for claimant.
func claimAll(ctx context.Context, t *testing.T, s store.Store, claimant string, now time.Time) []store.AuditChange {
	t.Helper()
	got, err := s.ClaimAuditChanges(ctx, claimant, now, now.Add(-time.Minute), 100)
	if err != nil {
		t.Fatalf("ClaimAuditChanges: %v", err)
	}
	for i := range got {
		got[i].Time = utc(t, "Time", got[i].Time)
	}
	return got
}

func pending(ctx context.Context, t *testing.T, s store.Store) bool {
	t.Helper()
	p, err := s.PendingAuditChanges(ctx)
	if err != nil {
		t.Fatalf("PendingAuditChanges: %v", err)
	}
	return p
}

// testAuditChangesWithTheirChange: each user-changing method, and each
// second-factor method that takes a change, stores the change its context
// carries, filled with the user's subject and, where
// the action sets them, the entitlements after it; an entitlement update
// that changes nothing stores none.
func testAuditChangesWithTheirChange(t *testing.T, s store.Store) {
	ctx := Context(t)
	if pending(ctx, t, s) {
		t.Fatal("PendingAuditChanges of an empty store")
	}
	alice := user("alice")
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

	cctx, _ := withChange(ctx, "c1", "add", at(1))
	wantErr(t, "CreateUser", s.CreateUser(cctx, alice), nil)
	alice.Disabled = true
	cctx, _ = withChange(ctx, "c2", "disable", at(2))
	wantErr(t, "UpdateUser", s.UpdateUser(cctx, alice), nil)
	cctx, _ = withChange(ctx, "c3", "entitle", at(3))
	_, err := s.UpdateEntitlements(cctx, "alice", setTo("ASX:quotes ASX:depth NZX:depth"), at(3), at(9))
	wantErr(t, "UpdateEntitlements", err, nil)
	cctx, _ = withChange(ctx, "c4", "entitle", at(4))
	_, err = s.UpdateEntitlements(cctx, "alice", setTo("NZX:depth ASX:depth ASX:quotes"), at(4), at(9))
	wantErr(t, "UpdateEntitlements to the same set", err, nil)
	// The second factors' methods know the subject alone: the change
	// names the user.
	cctx, c := withChange(ctx, "c4a", "mfa_recovery_codes", at(4))
	c.Username, c.Subject = "alice", alice.Subject
	wantErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(cctx, alice.Subject, [][]byte{hash("r1")}, at(4)), nil)
	cctx, c = withChange(ctx, "c4b", "mfa_reset", at(4))
	c.Username, c.Subject = "alice", alice.Subject
	wantErr(t, "ResetMFA", s.ResetMFA(cctx, alice.Subject), nil)
	cctx, c = withChange(ctx, "c5", "delete", at(5))
	c.Entitlements = []string{}
	_, err = s.DeleteUser(cctx, "alice", at(5), at(9))
	wantErr(t, "DeleteUser", err, nil)
	if !pending(ctx, t, s) {
		t.Fatal("PendingAuditChanges is false with changes stored")
	}

	sub := alice.Subject
	want := []store.AuditChange{
		{ID: "c1", Time: at(1), Action: "add", Username: "alice", Subject: sub, Entitlements: []string{"ASX:quotes", "NZX:depth"}},
		{ID: "c2", Time: at(2), Action: "disable", Username: "alice", Subject: sub},
		{ID: "c3", Time: at(3), Action: "entitle", Username: "alice", Subject: sub, Entitlements: entitle.MustParse("ASX:quotes ASX:depth NZX:depth").Strings()},
		{ID: "c4a", Time: at(4), Action: "mfa_recovery_codes", Username: "alice", Subject: sub},
		{ID: "c4b", Time: at(4), Action: "mfa_reset", Username: "alice", Subject: sub},
		{ID: "c5", Time: at(5), Action: "delete", Username: "alice", Subject: sub, Entitlements: []string{}},
	}
	equal(t, "the changes claimed", claimAll(ctx, t, s, "gw-1", at(10)), want)
	wantErr(t, "DeleteAuditChanges", s.DeleteAuditChanges(ctx, []string{"c1", "c2", "c3", "c4a", "c4b", "c5", "gone"}), nil)
	if pending(ctx, t, s) {
		t.Fatal("PendingAuditChanges after every change was deleted")
	}
	equal(t, "claimed after the delete", claimAll(ctx, t, s, "gw-1", at(11)), []store.AuditChange(nil))
}

// testAuditChangesNotOnFailure: a change that fails stores no audit
// change: the two commit together or not at all.
func testAuditChangesNotOnFailure(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	cctx, _ := withChange(ctx, "taken", "add", t0)
	wantErr(t, "CreateUser of a taken username", s.CreateUser(cctx, alice), store.ErrAlreadyExists)
	cctx, _ = withChange(ctx, "nobody", "disable", t0)
	wantErr(t, "UpdateUser of no one", s.UpdateUser(cctx, user("nobody")), store.ErrNotFound)
	cctx, _ = withChange(ctx, "refused", "entitle", t0)
	_, err := s.UpdateEntitlements(cctx, "alice", func(entitle.Set) (entitle.Set, error) {
		return entitle.Set{}, fmt.Errorf("refused")
	}, t0, t0.Add(time.Hour))
	if err == nil {
		t.Fatal("UpdateEntitlements with an update that fails: no error")
	}
	cctx, _ = withChange(ctx, "refused-codes", "mfa_recovery_codes", t0)
	if err := s.ReplaceRecoveryCodes(cctx, alice.Subject, [][]byte{hash("r1"), nil}, t0); err == nil {
		t.Fatal("ReplaceRecoveryCodes with an empty hash: no error")
	}
	cctx, _ = withChange(ctx, "nobody-deleted", "delete", t0)
	_, err = s.DeleteUser(cctx, "nobody", t0, t0.Add(time.Hour))
	wantErr(t, "DeleteUser of no one", err, store.ErrNotFound)
	if pending(ctx, t, s) {
		t.Fatalf("changes that failed left audit changes: %+v", claimAll(ctx, t, s, "gw-1", t0))
	}
}

// testAuditChangesClaims: a claimed change is not claimed again until its
// claim is stale (an instance that died holding it); changes come in the
// order they were stored, whatever their times say (two changes of a user
// in one millisecond keep their order), at most limit at a time.
func testAuditChangesClaims(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i, name := range []string{"carol", "alice", "bob"} {
		cctx, _ := withChange(ctx, "c-"+name, "add", t0.Add(time.Duration(3-i)*time.Second))
		wantErr(t, "CreateUser", s.CreateUser(cctx, user(name)), nil)
	}
	now := t0.Add(time.Hour)
	first, err := s.ClaimAuditChanges(ctx, "gw-1", now, now.Add(-time.Minute), 2)
	wantErr(t, "ClaimAuditChanges", err, nil)
	ids := func(cs []store.AuditChange) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	equal(t, "the first claim, in the order stored, two", ids(first), []string{"c-carol", "c-alice"})
	equal(t, "a second claimant at once", ids(claimAll(ctx, t, s, "gw-2", now.Add(time.Second))), []string{"c-bob"})
	equal(t, "a third before the claims are stale", ids(claimAll(ctx, t, s, "gw-3", now.Add(30*time.Second))), []string(nil))
	equal(t, "a third once they are", ids(claimAll(ctx, t, s, "gw-3", now.Add(2*time.Minute))), []string{"c-carol", "c-alice", "c-bob"})
}

// testAuditChangesConcurrentClaims: claimants racing get disjoint
// changes, and every change goes to one of them.
func testAuditChangesConcurrentClaims(t *testing.T, s store.Store) {
	ctx := Context(t)
	const n = 24
	for i := range n {
		name := fmt.Sprintf("user%02d", i)
		cctx, _ := withChange(ctx, "c-"+name, "add", t0.Add(time.Duration(i)*time.Millisecond))
		wantErr(t, "CreateUser", s.CreateUser(cctx, user(name)), nil)
	}
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	now := t0.Add(time.Hour)
	for w := range 6 {
		wg.Go(func() {
			for range n {
				cs, err := s.ClaimAuditChanges(ctx, fmt.Sprintf("gw-%d", w), now, now.Add(-time.Minute), 3)
				if err != nil {
					t.Errorf("ClaimAuditChanges: %v", err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					got = append(got, c.ID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("c-user%02d", i))
	}
	equal(t, "the changes the claimants got, each once", got, want)
}
