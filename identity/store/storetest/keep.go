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
// client (store.FamilyBound).
var keepCases = []testCase{
	{"LeastRecentlyUsedGo", testKeepLeastRecentlyUsedGo},
	{"DeadGoFirst", testKeepDeadGoFirst},
	{"ExpiredLeftToPurge", testKeepExpiredLeftToPurge},
	{"NewKept", testKeepNewKept},
	{"RevocationsStay", testKeepRevocationsStay},
	{"RecentlyUsedRevoked", testKeepRecentlyUsedRevoked},
	{"Legacy", testKeepLegacy},
	{"Concurrent", testKeepConcurrent},
}

// tokensLife is the bound's TokensLife in the suite.
const tokensLife = time.Hour

// keep is the bound of k families.
func keep(k int) store.FamilyBound { return store.FamilyBound{Keep: k, TokensLife: tokensLife} }

// ownedFamily is the family id of subject with client, created at created.
func ownedFamily(id, subject, client string, created time.Time) store.RefreshFamily {
	f := family(id)
	f.Subject, f.ClientID, f.Created = subject, client, created
	return f
}

// create creates f under bound.
func create(ctx context.Context, t *testing.T, s store.Store, f store.RefreshFamily, bound store.FamilyBound) {
	t.Helper()
	wantErr(t, "CreateRefreshFamily "+f.ID, s.CreateRefreshFamily(ctx, f, bound), nil)
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

// testKeepLeastRecentlyUsedGo: each create with Keep 3 leaves the 3 most
// recently used families of its subject and client (a rotation is a
// use); those of the subject with another client, and of another subject
// with the client, stay.
func testKeepLeastRecentlyUsedGo(t *testing.T, s store.Store) {
	ctx := Context(t)
	create(ctx, t, s, ownedFamily("other-client", "alice", "other-app", t0), store.FamilyBound{})
	create(ctx, t, s, ownedFamily("bob", "bob", "demo-app", t0), store.FamilyBound{})
	old := ownedFamily("old", "alice", "demo-app", t0)
	create(ctx, t, s, old, keep(3))
	var ids []string
	for i := range 4 {
		id := fmt.Sprintf("alice-%d", i)
		ids = append(ids, id)
		create(ctx, t, s, ownedFamily(id, "alice", "demo-app", t0.Add(time.Duration(i+1)*time.Minute)), keep(3))
		if i == 1 {
			// The oldest family is refreshed: the most recently used now.
			mustRotate(ctx, t, s, old, t0.Add(150*time.Second))
		}
	}
	equal(t, "alice's families", present(ctx, t, s, append([]string{"old"}, ids...)...), []string{"old", "alice-2", "alice-3"})
	equal(t, "the other families", present(ctx, t, s, "other-client", "bob"), []string{"other-client", "bob"})
	// Keep 1 leaves only the new family.
	create(ctx, t, s, ownedFamily("alice-last", "alice", "demo-app", t0.Add(time.Hour)), keep(1))
	equal(t, "alice's families after Keep 1", present(ctx, t, s, "old", "alice-2", "alice-3", "alice-last"), []string{"alice-last"})
}

// testKeepDeadGoFirst: revoked families, and those whose current token
// expired, go before a live one however old (a device that refreshes now
// and then keeps its family while the user signs in and out elsewhere).
func testKeepDeadGoFirst(t *testing.T, s store.Store) {
	ctx := Context(t)
	tv := ownedFamily("tv", "alice", "demo-app", t0)
	create(ctx, t, s, tv, keep(3))
	stale := ownedFamily("stale", "alice", "demo-app", t0.Add(time.Minute))
	stale.CurrentExpiresAt = t0.Add(2 * time.Minute) // its token expires unused
	create(ctx, t, s, stale, keep(3))
	create(ctx, t, s, ownedFamily("revoked", "alice", "demo-app", t0.Add(3*time.Minute)), keep(3))
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, "revoked", t0.Add(4*time.Minute), t0.Add(time.Hour)), nil)
	// Now tv, stale (dead), revoked (dead): two new families push out the
	// dead ones, newer as they are, not tv.
	create(ctx, t, s, ownedFamily("new-1", "alice", "demo-app", t0.Add(5*time.Minute)), keep(3))
	equal(t, "families after the first new one", present(ctx, t, s, "tv", "stale", "revoked", "new-1"), []string{"tv", "revoked", "new-1"})
	create(ctx, t, s, ownedFamily("new-2", "alice", "demo-app", t0.Add(6*time.Minute)), keep(3))
	equal(t, "families after the second new one", present(ctx, t, s, "tv", "revoked", "new-1", "new-2"), []string{"tv", "new-1", "new-2"})
	// All live: the least recently used goes.
	create(ctx, t, s, ownedFamily("new-3", "alice", "demo-app", t0.Add(7*time.Minute)), keep(3))
	equal(t, "families after the third new one", present(ctx, t, s, "tv", "new-1", "new-2", "new-3"), []string{"new-1", "new-2", "new-3"})
}

// testKeepExpiredLeftToPurge: a family past its absolute expiry neither
// counts nor is deleted by a create: the purge removes it.
func testKeepExpiredLeftToPurge(t *testing.T, s store.Store) {
	ctx := Context(t)
	expired := ownedFamily("expired", "alice", "demo-app", t0.Add(-31*24*time.Hour))
	expired.ExpiresAt, expired.CurrentExpiresAt = t0.Add(-time.Hour), t0.Add(-time.Hour)
	create(ctx, t, s, expired, store.FamilyBound{})
	create(ctx, t, s, ownedFamily("a", "alice", "demo-app", t0), keep(2))
	create(ctx, t, s, ownedFamily("b", "alice", "demo-app", t0.Add(time.Minute)), keep(2))
	equal(t, "families", present(ctx, t, s, "expired", "a", "b"), []string{"expired", "a", "b"})
}

// testKeepNewKept: the new family stays whatever its Created, when the
// others are newer or made at the same instant.
func testKeepNewKept(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i := range 4 {
		f := ownedFamily(fmt.Sprintf("same-%d", i), "alice", "demo-app", t0)
		create(ctx, t, s, f, keep(2))
		if _, err := s.RefreshFamily(ctx, f.ID); err != nil {
			t.Fatalf("the family just created (at the same instant as the others): %v", err)
		}
	}
	create(ctx, t, s, ownedFamily("newer", "alice", "demo-app", t0.Add(time.Hour)), store.FamilyBound{})
	create(ctx, t, s, ownedFamily("older", "alice", "demo-app", t0.Add(-time.Hour)), keep(2))
	got := present(ctx, t, s, "same-0", "same-1", "same-2", "same-3", "newer", "older")
	equal(t, "families after an older one was created with Keep 2", got, []string{"newer", "older"})
}

// testKeepRevocationsStay: a revoked family that the bound deletes stays
// revoked for its access tokens, in the list of revocations too.
func testKeepRevocationsStay(t *testing.T, s store.Store) {
	ctx := Context(t)
	create(ctx, t, s, ownedFamily("old", "alice", "demo-app", t0), store.FamilyBound{})
	revokedAt, until := t0.Add(time.Minute), t0.Add(2*time.Hour)
	wantErr(t, "RevokeRefreshFamily old", s.RevokeRefreshFamily(ctx, "old", revokedAt, until), nil)
	before := revocations(ctx, t, s, t0.Add(time.Hour))
	create(ctx, t, s, ownedFamily("new", "alice", "demo-app", t0.Add(time.Hour)), keep(1))
	equal(t, "families", present(ctx, t, s, "old", "new"), []string{"new"})
	equal(t, "revocations after the revoked family was deleted", revocations(ctx, t, s, t0.Add(time.Hour)), before)
	revoked, err := s.AccessTokenRevoked(ctx, "a-token-of-old", "old", "alice", t0.Add(30*time.Second))
	if err != nil || !revoked {
		t.Errorf("an access token of the deleted, revoked family: revoked %v, %v; want revoked", revoked, err)
	}
}

// testKeepRecentlyUsedRevoked: a live family the bound deletes is revoked
// until TokensLife after the create when it was used within TokensLife
// (an access token issued from it may still be accepted), and not when
// its last use is older.
func testKeepRecentlyUsedRevoked(t *testing.T, s store.Store) {
	ctx := Context(t)
	now := t0.Add(10 * time.Hour)
	create(ctx, t, s, ownedFamily("idle", "alice", "demo-app", t0), store.FamilyBound{})
	used := ownedFamily("used", "alice", "demo-app", t0.Add(time.Minute))
	create(ctx, t, s, used, store.FamilyBound{})
	mustRotate(ctx, t, s, used, now.Add(-tokensLife/2))
	create(ctx, t, s, ownedFamily("new", "alice", "demo-app", now), keep(1))
	equal(t, "families", present(ctx, t, s, "idle", "used", "new"), []string{"new"})
	equal(t, "revocations", revocations(ctx, t, s, now),
		[]store.Revocation{{FamilyID: "used", ExpiresAt: now.Add(tokensLife), RevokedAt: now}})
	revoked, err := s.AccessTokenRevoked(ctx, "a-token-of-used", "used", "alice", now.Add(-time.Minute))
	if err != nil || !revoked {
		t.Errorf("an access token of the deleted family used recently: revoked %v, %v; want revoked", revoked, err)
	}
}

// testKeepLegacy: a legacy family counts too; one without a creation
// time goes first, with its tokens, and the access tokens recorded for it
// are revoked (its last use is unknown).
func testKeepLegacy(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls := seeder(t, s)
	l := legacyFamily("legacy")
	l.family.Subject, l.family.Created = "alice", time.Time{}
	mustSeed(ctx, t, ls, l)
	create(ctx, t, s, ownedFamily("a", "alice", "demo-app", t0), keep(2))
	equal(t, "families after the first create", present(ctx, t, s, "legacy", "a"), []string{"legacy", "a"})
	create(ctx, t, s, ownedFamily("b", "alice", "demo-app", t0.Add(time.Minute)), keep(2))
	equal(t, "families after the second create", present(ctx, t, s, "legacy", "a", "b"), []string{"a", "b"})
	for _, tok := range l.tokens {
		_, _, err := s.LegacyRefreshToken(ctx, tok.Hash)
		wantErr(t, "LegacyRefreshToken of the deleted family", err, store.ErrNotFound)
	}
	for _, at := range l.ats {
		revoked, err := s.AccessTokenRevoked(ctx, at.JTI, "", "alice", t0)
		if err != nil || !revoked {
			t.Errorf("access token %s recorded for the deleted legacy family: revoked %v, %v; want revoked", at.JTI, revoked, err)
		}
	}
}

// testKeepConcurrent: creates for one subject and client at once, Keep 5,
// leave exactly 5; another subject's creates, running with them, are
// bounded on their own.
func testKeepConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	const n, k = 48, 5
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
			wg.Go(func() { errs[who*n+i] = s.CreateRefreshFamily(ctx, f, keep(k)) })
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
		if len(got) != k {
			t.Errorf("subject %d: %d families after %d concurrent creates with Keep %d, want %d: %v", who, len(got), n, k, k, got)
		}
		// One more create, made after all the others: it and the newest
		// k-1 of those left stay (a create keeps its own family even when
		// it is older than the others, so those left need not be the
		// newest of all).
		last := ownedFamily(fmt.Sprintf("s%d-last", who), fmt.Sprintf("subject-%d", who), "demo-app", t0.Add(time.Hour))
		create(ctx, t, s, last, keep(k))
		want := append(slices.Clone(got[max(0, len(got)-k+1):]), last.ID)
		equal(t, fmt.Sprintf("subject %d after the last create", who), present(ctx, t, s, append(ids[who], last.ID)...), want)
	}
}
