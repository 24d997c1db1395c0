package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// keepCases test CreateRefreshFamily's bound on a user's families with a
// client (keep).
var keepCases = []testCase{
	{"OldestGo", testKeepOldestGo},
	{"NewKept", testKeepNewKept},
	{"RevocationsStay", testKeepRevocationsStay},
	{"Legacy", testKeepLegacy},
	{"Concurrent", testKeepConcurrent},
}

// ownedFamily is the family id of subject with client, created at created.
func ownedFamily(id, subject, client string, created time.Time) store.RefreshFamily {
	f := family(id)
	f.Subject, f.ClientID, f.Created = subject, client, created
	return f
}

// present lists which of ids are stored.
func present(ctx context.Context, t *testing.T, s store.Store, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		_, err := s.RefreshFamily(ctx, id)
		switch {
		case err == nil:
			out = append(out, id)
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("RefreshFamily(%q): %v", id, err)
		}
	}
	return out
}

// testKeepOldestGo: each create with keep 3 leaves the newest 3 families
// of its subject and client, revoked ones counted; those of the subject
// with another client, and of another subject with the client, stay.
func testKeepOldestGo(t *testing.T, s store.Store) {
	ctx := Context(t)
	other := ownedFamily("other-client", "alice", "other-app", t0)
	bob := ownedFamily("bob", "bob", "demo-app", t0)
	wantErr(t, "CreateRefreshFamily other-client", s.CreateRefreshFamily(ctx, other, 0), nil)
	wantErr(t, "CreateRefreshFamily bob", s.CreateRefreshFamily(ctx, bob, 0), nil)
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("alice-%d", i)
		ids = append(ids, id)
		f := ownedFamily(id, "alice", "demo-app", t0.Add(time.Duration(i)*time.Minute))
		wantErr(t, "CreateRefreshFamily "+id, s.CreateRefreshFamily(ctx, f, 3), nil)
		if i == 1 {
			// A revoked family counts as one: the bound is on rows.
			wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, id, t0.Add(time.Hour), t0.Add(2*time.Hour)), nil)
		}
		want := ids[max(0, len(ids)-3):]
		equal(t, fmt.Sprintf("alice's families after %d creates", i+1), present(ctx, t, s, ids...), want)
	}
	equal(t, "the other families", present(ctx, t, s, "other-client", "bob"), []string{"other-client", "bob"})
	// keep 1 leaves only the new family.
	last := ownedFamily("alice-last", "alice", "demo-app", t0.Add(time.Hour))
	wantErr(t, "CreateRefreshFamily with keep 1", s.CreateRefreshFamily(ctx, last, 1), nil)
	equal(t, "alice's families after keep 1", present(ctx, t, s, append(ids, last.ID)...), []string{last.ID})
}

// testKeepNewKept: the new family stays whatever its Created, when the
// others are newer or made at the same instant.
func testKeepNewKept(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i := range 4 {
		f := ownedFamily(fmt.Sprintf("same-%d", i), "alice", "demo-app", t0)
		wantErr(t, "CreateRefreshFamily "+f.ID, s.CreateRefreshFamily(ctx, f, 2), nil)
		if _, err := s.RefreshFamily(ctx, f.ID); err != nil {
			t.Fatalf("the family just created (at the same instant as the others): %v", err)
		}
	}
	newer := ownedFamily("newer", "alice", "demo-app", t0.Add(time.Hour))
	wantErr(t, "CreateRefreshFamily newer", s.CreateRefreshFamily(ctx, newer, 0), nil)
	older := ownedFamily("older", "alice", "demo-app", t0.Add(-time.Hour))
	wantErr(t, "CreateRefreshFamily older", s.CreateRefreshFamily(ctx, older, 2), nil)
	got := present(ctx, t, s, "same-0", "same-1", "same-2", "same-3", "newer", "older")
	equal(t, "families after an older one was created with keep 2", got, []string{"newer", "older"})
}

// testKeepRevocationsStay: a revoked family that the bound deletes stays
// revoked for its access tokens, in the list of revocations too.
func testKeepRevocationsStay(t *testing.T, s store.Store) {
	ctx := Context(t)
	old := ownedFamily("old", "alice", "demo-app", t0)
	wantErr(t, "CreateRefreshFamily old", s.CreateRefreshFamily(ctx, old, 0), nil)
	revokedAt, until := t0.Add(time.Minute), t0.Add(2*time.Hour)
	wantErr(t, "RevokeRefreshFamily old", s.RevokeRefreshFamily(ctx, "old", revokedAt, until), nil)
	before := revocations(ctx, t, s, t0.Add(time.Hour))
	newer := ownedFamily("new", "alice", "demo-app", t0.Add(time.Hour))
	wantErr(t, "CreateRefreshFamily new", s.CreateRefreshFamily(ctx, newer, 1), nil)
	equal(t, "families", present(ctx, t, s, "old", "new"), []string{"new"})
	equal(t, "revocations after the revoked family was deleted", revocations(ctx, t, s, t0.Add(time.Hour)), before)
	revoked, err := s.AccessTokenRevoked(ctx, "a-token-of-old", "old", "alice", t0.Add(30*time.Second))
	if err != nil || !revoked {
		t.Errorf("an access token of the deleted, revoked family: revoked %v, %v; want revoked", revoked, err)
	}
}

// testKeepLegacy: a legacy family counts too, and goes with its tokens.
func testKeepLegacy(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l := legacyFamily("legacy")
	l.family.Subject = "alice"
	mustSeed(ctx, t, ls, l)
	f := ownedFamily("new", "alice", "demo-app", t0.Add(time.Hour))
	wantErr(t, "CreateRefreshFamily new", s.CreateRefreshFamily(ctx, f, 1), nil)
	equal(t, "families", present(ctx, t, s, "legacy", "new"), []string{"new"})
	for _, tok := range l.tokens {
		_, _, err := s.LegacyRefreshToken(ctx, tok.Hash)
		wantErr(t, "LegacyRefreshToken of the deleted family", err, store.ErrNotFound)
	}
}

// testKeepConcurrent: creates for one subject and client at once, keep 5,
// leave exactly 5, all of them among the last creates to commit; another
// subject's creates, running with them, are bounded on their own.
func testKeepConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	const n, keep = 48, 5
	var (
		wg   sync.WaitGroup
		errs [2 * n]error
		ids  [2][]string
	)
	for who := range 2 {
		for i := range n {
			id := fmt.Sprintf("s%d-%02d", who, i)
			ids[who] = append(ids[who], id)
			f := ownedFamily(id, fmt.Sprintf("subject-%d", who), "demo-app", t0.Add(time.Duration(i)*time.Millisecond))
			wg.Go(func() { errs[who*n+i] = s.CreateRefreshFamily(ctx, f, keep) })
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	for who := range 2 {
		got := present(ctx, t, s, ids[who]...)
		if len(got) != keep {
			t.Errorf("subject %d: %d families after %d concurrent creates with keep %d, want %d: %v", who, len(got), n, keep, keep, got)
		}
		// One more create, made after all the others: it and the newest
		// keep-1 of those left stay (a create keeps its own family even
		// when it is older than the others, so those left need not be the
		// newest of all).
		last := ownedFamily(fmt.Sprintf("s%d-last", who), fmt.Sprintf("subject-%d", who), "demo-app", t0.Add(time.Hour))
		wantErr(t, "the last create", s.CreateRefreshFamily(ctx, last, keep), nil)
		want := append(slices.Clone(got[max(0, len(got)-keep+1):]), last.ID)
		equal(t, fmt.Sprintf("subject %d after the last create", who), present(ctx, t, s, append(ids[who], last.ID)...), want)
	}
}
