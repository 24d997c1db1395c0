package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

var entitlementCases = []testCase{
	{"Change", testEntitlementsChange},
	{"Unchanged", testEntitlementsUnchanged},
	{"UpdateFails", testEntitlementsUpdateFails},
	{"UpdateUserKeepsThem", testEntitlementsUpdateUserKeepsThem},
	{"ChangeEndsNoSession", testEntitlementsChangeEndsNoSession},
	{"Expire", testEntitlementsExpire},
	{"Concurrent", testEntitlementsConcurrent},
}

// setTo is an update that sets the entitlements to pairs.
func setTo(pairs string) func(entitle.Set) (entitle.Set, error) {
	return func(entitle.Set) (entitle.Set, error) { return entitle.MustParse(pairs), nil }
}

// change is the entitlement change of subject to pairs at now.
func change(subject, pairs string, now, until time.Time) store.Revocation {
	set := entitle.MustParse(pairs)
	return store.Revocation{Subject: subject, NotBefore: now, ExpiresAt: until, RevokedAt: now, Entitlements: &set}
}

// entitlementChange reads the subject's change, normalised.
func entitlementChange(ctx context.Context, t *testing.T, s store.Store, subject string) store.Revocation {
	t.Helper()
	r, err := s.EntitlementChange(ctx, subject)
	wantErr(t, "EntitlementChange "+subject, err, nil)
	return normRevocations(t, []store.Revocation{r})[0]
}

// testEntitlementsChange: UpdateEntitlements stores the new set (read by
// username, subject and in the list) and Updated, and records the
// subject's change, listed with the other revocations (in full and
// since) and read by EntitlementChange; a second change replaces the
// first (one record per subject, its set and times the last's); another
// user's pairs stay; a missing user is ErrNotFound.
func testEntitlementsChange(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice, bob := user("alice"), user("bob")
	for _, u := range []store.User{alice, bob} {
		wantErr(t, "CreateUser "+u.Username, s.CreateUser(ctx, u), nil)
	}
	now, until := t0.Add(time.Hour), t0.Add(3*time.Hour)
	got, err := s.UpdateEntitlements(ctx, "alice", func(old entitle.Set) (entitle.Set, error) {
		if !old.Equal(alice.Entitlements) {
			t.Errorf("update was given %v, want the stored %v", old, alice.Entitlements)
		}
		return entitle.MustParse("ASX:quotes ASX:depth NZX:quotes"), nil
	}, now, until)
	wantErr(t, "UpdateEntitlements", err, nil)
	alice.Entitlements, alice.Updated = entitle.MustParse("ASX:quotes ASX:depth NZX:quotes"), now
	equal(t, "the user returned", normUser(t, got), alice)
	equal(t, "User", readUser(ctx, t, s, "alice"), alice)
	bySubject, err := s.UserBySubject(ctx, alice.Subject)
	wantErr(t, "UserBySubject", err, nil)
	equal(t, "UserBySubject", normUser(t, bySubject), alice)
	equal(t, "Users", users(ctx, t, s), []store.User{alice, bob})
	first := change(alice.Subject, "ASX:quotes ASX:depth NZX:quotes", now, until)
	equal(t, "Revocations", revocations(ctx, t, s, now), []store.Revocation{first})
	equal(t, "EntitlementChange", entitlementChange(ctx, t, s, alice.Subject), first)

	later := now.Add(time.Minute)
	_, err = s.UpdateEntitlements(ctx, "alice", setTo(""), later, until.Add(time.Minute))
	wantErr(t, "UpdateEntitlements to none", err, nil)
	alice.Entitlements, alice.Updated = entitle.Set{}, later
	equal(t, "User after the second change", readUser(ctx, t, s, "alice"), alice)
	second := change(alice.Subject, "", later, until.Add(time.Minute))
	equal(t, "Revocations after the second change", revocations(ctx, t, s, later), []store.Revocation{second})
	equal(t, "RevocationsSince the first", revocationsSince(ctx, t, s, later, later), []store.Revocation{second})
	equal(t, "EntitlementChange after the second", entitlementChange(ctx, t, s, alice.Subject), second)
	equal(t, "another user", readUser(ctx, t, s, "bob"), bob)

	_, err = s.UpdateEntitlements(ctx, "carol", setTo("ASX:quotes"), now, until)
	wantErr(t, "UpdateEntitlements of no one", err, store.ErrNotFound)
	_, err = s.EntitlementChange(ctx, bob.Subject)
	wantErr(t, "EntitlementChange of a subject without one", err, store.ErrNotFound)
}

// testEntitlementsUnchanged: an update that returns the stored set (in
// another order) writes nothing: no change recorded, Updated as it was.
func testEntitlementsUnchanged(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	got, err := s.UpdateEntitlements(ctx, "alice", setTo("NZX:depth,ASX:quotes"), t0.Add(time.Hour), t0.Add(2*time.Hour))
	wantErr(t, "UpdateEntitlements", err, nil)
	equal(t, "the user returned", normUser(t, got), alice)
	equal(t, "User", readUser(ctx, t, s, "alice"), alice)
	equal(t, "Revocations", revocations(ctx, t, s, t0.Add(time.Hour)), nil)
}

// testEntitlementsUpdateFails: update's error is returned, wrapped, and
// nothing changes.
func testEntitlementsUpdateFails(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	refused := errors.New("refused")
	_, err := s.UpdateEntitlements(ctx, "alice", func(entitle.Set) (entitle.Set, error) { return entitle.Set{}, refused },
		t0.Add(time.Hour), t0.Add(2*time.Hour))
	wantErr(t, "UpdateEntitlements", err, refused)
	equal(t, "User", readUser(ctx, t, s, "alice"), alice)
	equal(t, "Revocations", revocations(ctx, t, s, t0.Add(time.Hour)), nil)
}

// testEntitlementsUpdateUserKeepsThem: UpdateUser changes every field
// but the entitlements, so that a read-modify-write of another field
// (a password, a disable) never undoes a change made meanwhile.
func testEntitlementsUpdateUserKeepsThem(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	stale := alice
	stale.Entitlements, stale.DisplayName = entitle.MustParse("XYZ:quotes"), "Alice"
	wantErr(t, "UpdateUser", s.UpdateUser(ctx, stale), nil)
	stale.Entitlements = alice.Entitlements
	equal(t, "User", readUser(ctx, t, s, "alice"), stale)
}

// testEntitlementsChangeEndsNoSession: a change revokes no family and no
// session: AccessTokenRevoked, which logins and refreshes ask, does not
// count it, and the subject's families stay live.
func testEntitlementsChangeEndsNoSession(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	f := createFamilyOf(ctx, t, s, "a1", alice.Subject)
	now := t0.Add(time.Hour)
	_, err := s.UpdateEntitlements(ctx, "alice", setTo("ASX:quotes"), now, now.Add(time.Hour))
	wantErr(t, "UpdateEntitlements", err, nil)
	revoked, err := s.AccessTokenRevoked(ctx, "", "", alice.Subject, t0)
	wantErr(t, "AccessTokenRevoked", err, nil)
	if revoked {
		t.Error("AccessTokenRevoked counts an entitlement change as the end of the subject's sessions")
	}
	checkFamily(ctx, t, s, "the subject's family", f)
}

// testEntitlementsExpire: a change is listed until its expiry, then
// DeleteExpired removes it (and counts it).
func testEntitlementsExpire(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	now, until := t0.Add(time.Hour), t0.Add(2*time.Hour)
	_, err := s.UpdateEntitlements(ctx, "alice", setTo("ASX:quotes"), now, until)
	wantErr(t, "UpdateEntitlements", err, nil)
	equal(t, "Revocations just before expiry", len(revocations(ctx, t, s, until.Add(-time.Millisecond))), 1)
	equal(t, "Revocations at expiry", revocations(ctx, t, s, until), nil)
	n, err := s.DeleteExpired(ctx, until)
	wantErr(t, "DeleteExpired", err, nil)
	equal(t, "DeleteExpired removed", n, int64(1))
	_, err = s.EntitlementChange(ctx, alice.Subject)
	wantErr(t, "EntitlementChange after DeleteExpired", err, store.ErrNotFound)
}

// testEntitlementsConcurrent: concurrent changes of one user, each adding
// a pair of its own to what it reads, lose none (each update reads what
// the one before wrote), and the change recorded holds the user's set.
func testEntitlementsConcurrent(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	alice.Entitlements = entitle.Set{}
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			pair := entitle.Pair{Venue: fmt.Sprintf("V%d", i), Feed: "quotes"}
			_, err := s.UpdateEntitlements(ctx, "alice", func(old entitle.Set) (entitle.Set, error) {
				return entitle.New(append(old.Pairs()[:len(old.Pairs()):len(old.Pairs())], pair)...)
			}, t0.Add(time.Duration(i)*time.Millisecond), t0.Add(time.Hour))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		wantErr(t, "UpdateEntitlements", err, nil)
	}
	got := readUser(ctx, t, s, "alice").Entitlements
	if got.Len() != n {
		t.Fatalf("after %d concurrent additions the user holds %v", n, got)
	}
	c := entitlementChange(ctx, t, s, alice.Subject)
	if !c.Entitlements.Equal(got) {
		t.Errorf("the change recorded holds %v, the user %v", c.Entitlements, got)
	}
}

// readUser reads the user called name, normalised.
func readUser(ctx context.Context, t *testing.T, s store.Store, name string) store.User {
	t.Helper()
	u, err := s.User(ctx, name)
	wantErr(t, "User "+name, err, nil)
	return normUser(t, u)
}

// testDeviceAskedEntitlements: a device authorization keeps the pairs its
// request asked for, told apart from a request that asked for none (nil)
// and from one that asked for no pair (the empty set), through every
// step that returns it: the reads, a poll, the decision and the use. It
// failed when the SQLite backend stored an empty set as NULL (the
// request that asked for no pair read back as one that asked for none,
// whose device would get every pair of the user).
func testDeviceAskedEntitlements(t *testing.T, s store.DeviceStore) {
	ctx := Context(t)
	some, none := entitle.MustParse("ASX:quotes NZX:depth"), entitle.Set{}
	for _, tc := range []struct {
		name  string
		asked *entitle.Set
	}{{"nothing asked", nil}, {"no pair", &none}, {"two pairs", &some}} {
		d := deviceCode(tc.name)
		d.AskedEntitlements = tc.asked
		wantErr(t, "PutDeviceCode "+tc.name, s.PutDeviceCode(ctx, d), nil)
		steps := []struct {
			what string
			call func() (store.DeviceCode, error)
		}{
			{"DeviceCode", func() (store.DeviceCode, error) { return s.DeviceCode(ctx, d.Hash) }},
			{"DeviceCodeByUserCode", func() (store.DeviceCode, error) { return s.DeviceCodeByUserCode(ctx, d.UserCodeHash) }},
			{"PollDeviceCode", func() (store.DeviceCode, error) { return s.PollDeviceCode(ctx, d.Hash, t0.Add(time.Second)) }},
			{"DecideDeviceCode", func() (store.DeviceCode, error) {
				return s.DecideDeviceCode(ctx, d.UserCodeHash, t0.Add(2*time.Second), approve("alice"))
			}},
			{"ConsumeDeviceCode", func() (store.DeviceCode, error) {
				return s.ConsumeDeviceCode(ctx, d.Hash, t0.Add(3*time.Second), store.CodeIssue{FamilyID: "f", AccessTokenID: "at"})
			}},
		}
		for _, step := range steps {
			got, err := step.call()
			wantErr(t, step.what+" "+tc.name, err, nil)
			equal(t, step.what+" "+tc.name+": AskedEntitlements", got.AskedEntitlements, tc.asked)
		}
	}
}
