package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

var userCases = []testCase{
	{"CreateAndRead", testUsersCreateAndRead},
	{"NotFound", testUsersNotFound},
	{"CreateTakenUsername", testUsersCreateTakenUsername},
	{"CreateTakenSubject", testUsersCreateTakenSubject},
	{"UsernamesAreCaseSensitive", testUsersCaseSensitive},
	{"Update", testUsersUpdate},
	{"UpdateMissing", testUsersUpdateMissing},
	{"UpdateToTakenSubject", testUsersUpdateToTakenSubject},
	{"List", testUsersList},
	{"ReplacePasswordHash", testUsersReplacePasswordHash},
	{"WithSubjects", testUsersWithSubjects},
	{"Delete", testUsersDelete},
}

// testUsersDelete: deleting a user returns it and leaves none by its
// name or subject; its families are revoked and its subject's tokens
// refused from then, as RevokeSubject does; other users keep theirs; the
// name can be taken again, the subject by no one (ErrSubjectDeleted); a
// user that is not there is ErrNotFound, and nothing changes.
func testUsersDelete(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice, bob := user("alice"), user("bob")
	for _, u := range []store.User{alice, bob} {
		wantErr(t, "CreateUser "+u.Username, s.CreateUser(ctx, u), nil)
	}
	a1 := createFamilyOf(ctx, t, s, "a1", alice.Subject)
	b1 := createFamilyOf(ctx, t, s, "b1", bob.Subject)
	now, until := t0.Add(time.Hour), t0.Add(3*time.Hour)

	_, err := s.DeleteUser(ctx, "Alice", now, until)
	wantErr(t, "DeleteUser of a name in another case", err, store.ErrNotFound)
	equal(t, "Revocations after deleting no one", revocations(ctx, t, s, now), nil)

	got, err := s.DeleteUser(ctx, "alice", now, until)
	wantErr(t, "DeleteUser", err, nil)
	equal(t, "the user deleted", normUser(t, got), alice)
	_, err = s.User(ctx, "alice")
	wantErr(t, "User after DeleteUser", err, store.ErrNotFound)
	_, err = s.UserBySubject(ctx, alice.Subject)
	wantErr(t, "UserBySubject after DeleteUser", err, store.ErrNotFound)
	a1.RevokedAt = now
	checkFamily(ctx, t, s, "the deleted user's family", a1)
	checkFamily(ctx, t, s, "another user's family", b1)
	equal(t, "Revocations", revocations(ctx, t, s, now), []store.Revocation{
		{FamilyID: "a1", ExpiresAt: until, RevokedAt: now},
		{Subject: alice.Subject, NotBefore: now, ExpiresAt: until, RevokedAt: now},
	})
	stillBob, err := s.User(ctx, "bob")
	wantErr(t, "User bob", err, nil)
	equal(t, "another user", normUser(t, stillBob), bob)

	_, err = s.DeleteUser(ctx, "alice", now.Add(time.Minute), until)
	wantErr(t, "DeleteUser again", err, store.ErrNotFound)
	deleted, err := s.DeletedSubjects(ctx, []string{strings.ToUpper(alice.Subject), bob.Subject, "none"})
	wantErr(t, "DeletedSubjects", err, nil)
	equal(t, "the deleted subjects among those asked", deleted, []string{alice.Subject})
	wantErr(t, "CreateUser with the deleted user's subject", s.CreateUser(ctx, alice), store.ErrSubjectDeleted)
	carol := user("carol")
	carol.Subject = alice.Subject
	wantErr(t, "CreateUser of another name with the deleted user's subject", s.CreateUser(ctx, carol), store.ErrSubjectDeleted)
	_, err = s.UserBySubject(ctx, alice.Subject)
	wantErr(t, "UserBySubject of the deleted subject", err, store.ErrNotFound)
	again := user("alice")
	again.Subject = "another-subject"
	wantErr(t, "CreateUser with the deleted user's name", s.CreateUser(ctx, again), nil)
	// Deleting the new alice retires its subject too; the first stays retired.
	_, err = s.DeleteUser(ctx, "alice", now.Add(2*time.Minute), until)
	wantErr(t, "DeleteUser of the new alice", err, nil)
	wantErr(t, "CreateUser with the first subject", s.CreateUser(ctx, alice), store.ErrSubjectDeleted)
}

// testUsersWithSubjects: the users whose subject is one of those asked,
// ASCII case aside; no others.
func testUsersWithSubjects(t *testing.T, s store.Store) {
	ctx := Context(t)
	var want []string
	for _, u := range []struct{ name, subject string }{{"a", "svc"}, {"b", "Other-Client"}, {"c", "svc-1"}, {"d", "Über"}} {
		x := user(u.name)
		x.Subject = u.subject
		wantErr(t, "CreateUser "+u.name, s.CreateUser(ctx, x), nil)
		if u.name == "a" || u.name == "b" || u.name == "d" {
			want = append(want, u.name)
		}
	}
	got, err := s.UsersWithSubjects(ctx, []string{"SVC", "other-client", "none", "Über"})
	wantErr(t, "UsersWithSubjects", err, nil)
	var names []string
	for _, u := range got {
		names = append(names, u.Username)
	}
	slices.Sort(names)
	equal(t, "users with the subjects", names, want)
	got, err = s.UsersWithSubjects(ctx, nil)
	wantErr(t, "UsersWithSubjects of none", err, nil)
	equal(t, "users with no subject asked", len(got), 0)
}

// testUsersReplacePasswordHash: the hash changes only while it is still
// the one the caller read.
func testUsersReplacePasswordHash(t *testing.T, s store.Store) {
	ctx := Context(t)
	u := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, u), nil)
	later := t0.Add(time.Hour)
	wantErr(t, "ReplacePasswordHash", s.ReplacePasswordHash(ctx, "alice", u.PasswordHash, "new-hash", later), nil)
	got, err := s.User(ctx, "alice")
	wantErr(t, "User", err, nil)
	equal(t, "password hash after the swap", got.PasswordHash, "new-hash")
	sameTime(t, "Updated after the swap", got.Updated, later)
	wantErr(t, "ReplacePasswordHash with a stale hash", s.ReplacePasswordHash(ctx, "alice", u.PasswordHash, "other-hash", later), store.ErrNotFound)
	got, _ = s.User(ctx, "alice")
	equal(t, "password hash after a stale swap", got.PasswordHash, "new-hash")
	wantErr(t, "ReplacePasswordHash of a missing user", s.ReplacePasswordHash(ctx, "bob", "x", "y", later), store.ErrNotFound)
}

// user is a user called name with every field set.
func user(name string) store.User {
	return store.User{
		Username:      name,
		Subject:       "5be86359-" + name,
		PasswordHash:  "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA",
		DisplayName:   "User " + name,
		Email:         name + "@example.com",
		EmailVerified: true,
		Scopes:        []string{"openid", "profile", "Service/Market"},
		Roles:         []string{"trader", "role with spaces", `quote"d`},
		Entitlements:  entitle.MustParse("ASX:quotes NZX:depth"),
		Created:       t0,
		Updated:       t0.Add(time.Minute),
	}
}

// users lists the stored users, normalised.
func users(ctx context.Context, t *testing.T, s store.Store) []store.User {
	t.Helper()
	us, err := s.Users(ctx)
	if err != nil {
		t.Fatalf("Users: %v", err)
	}
	var out []store.User
	for _, u := range us {
		out = append(out, normUser(t, u))
	}
	return out
}

// checkUser checks that u is stored, by username and by subject.
func checkUser(ctx context.Context, t *testing.T, s store.Store, u store.User) {
	t.Helper()
	got, err := s.User(ctx, u.Username)
	wantErr(t, "User "+u.Username, err, nil)
	equal(t, "User "+u.Username, normUser(t, got), normUser(t, u))
	got, err = s.UserBySubject(ctx, u.Subject)
	wantErr(t, "UserBySubject "+u.Subject, err, nil)
	equal(t, "UserBySubject "+u.Subject, normUser(t, got), normUser(t, u))
}

func testUsersCreateAndRead(t *testing.T, s store.Store) {
	ctx := Context(t)
	full := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, full), nil)
	checkUser(ctx, t, s, full)

	// Empty lists, false flags and zero times round-trip too.
	bare := store.User{Username: "bob", Subject: "sub-bob", PasswordHash: "$2a$10$x", Scopes: []string{}, Disabled: true}
	wantErr(t, "CreateUser", s.CreateUser(ctx, bare), nil)
	checkUser(ctx, t, s, bare)
}

func testUsersNotFound(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "CreateUser", s.CreateUser(ctx, user("alice")), nil)
	_, err := s.User(ctx, "bob")
	wantErr(t, "User of a missing user", err, store.ErrNotFound)
	_, err = s.UserBySubject(ctx, "alice") // a username is not a subject
	wantErr(t, "UserBySubject of a missing subject", err, store.ErrNotFound)
}

func testUsersCreateTakenUsername(t *testing.T, s store.Store) {
	ctx := Context(t)
	u := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, u), nil)
	dup := user("alice")
	dup.Subject = "another subject"
	wantErr(t, "CreateUser with a taken username", s.CreateUser(ctx, dup), store.ErrAlreadyExists)
	equal(t, "Users", users(ctx, t, s), []store.User{normUser(t, u)})
}

func testUsersCreateTakenSubject(t *testing.T, s store.Store) {
	ctx := Context(t)
	u := user("alice")
	wantErr(t, "CreateUser", s.CreateUser(ctx, u), nil)
	dup := user("bob")
	dup.Subject = u.Subject
	wantErr(t, "CreateUser with a taken subject", s.CreateUser(ctx, dup), store.ErrAlreadyExists)
	equal(t, "Users", users(ctx, t, s), []store.User{normUser(t, u)})
}

func testUsersCaseSensitive(t *testing.T, s store.Store) {
	ctx := Context(t)
	lower, upper := user("alice"), user("Alice")
	wantErr(t, "CreateUser alice", s.CreateUser(ctx, lower), nil)
	wantErr(t, "CreateUser Alice", s.CreateUser(ctx, upper), nil)
	checkUser(ctx, t, s, lower)
	checkUser(ctx, t, s, upper)
	_, err := s.User(ctx, "ALICE")
	wantErr(t, "User ALICE", err, store.ErrNotFound)
}

// testUsersUpdate: an update replaces every field of the user but its
// entitlements (UpdateEntitlements changes those).
func testUsersUpdate(t *testing.T, s store.Store) {
	ctx := Context(t)
	u, other := user("alice"), user("bob")
	wantErr(t, "CreateUser", s.CreateUser(ctx, u), nil)
	wantErr(t, "CreateUser", s.CreateUser(ctx, other), nil)

	upd := store.User{
		Username:     "alice",
		Subject:      "new-subject",
		PasswordHash: "$argon2id$v=19$m=65536,t=3,p=4$bmV3$bmV3",
		DisplayName:  "Alice Liddell",
		Scopes:       []string{"openid"},
		Disabled:     true,
		Created:      u.Created,
		Updated:      t0.Add(time.Hour),
	}
	wantErr(t, "UpdateUser", s.UpdateUser(ctx, upd), nil)
	upd.Entitlements = u.Entitlements
	checkUser(ctx, t, s, upd)
	_, err := s.UserBySubject(ctx, u.Subject)
	wantErr(t, "UserBySubject of the old subject", err, store.ErrNotFound)
	checkUser(ctx, t, s, other)
}

func testUsersUpdateMissing(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "UpdateUser of a missing user", s.UpdateUser(ctx, user("alice")), store.ErrNotFound)
	if us := users(ctx, t, s); len(us) != 0 {
		t.Errorf("Users after updating a missing user: %+v", us)
	}
}

func testUsersUpdateToTakenSubject(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice, bob := user("alice"), user("bob")
	wantErr(t, "CreateUser", s.CreateUser(ctx, alice), nil)
	wantErr(t, "CreateUser", s.CreateUser(ctx, bob), nil)
	upd := alice
	upd.Subject = bob.Subject
	upd.DisplayName = "changed"
	wantErr(t, "UpdateUser to a taken subject", s.UpdateUser(ctx, upd), store.ErrAlreadyExists)
	checkUser(ctx, t, s, alice)
	checkUser(ctx, t, s, bob)
}

func testUsersList(t *testing.T, s store.Store) {
	ctx := Context(t)
	if us := users(ctx, t, s); len(us) != 0 {
		t.Errorf("Users of an empty store: %+v", us)
	}
	var want []store.User
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		want = append(want, normUser(t, user(name)))
	}
	for _, i := range []int{2, 0, 3, 1} {
		wantErr(t, "CreateUser", s.CreateUser(ctx, want[i]), nil)
	}
	equal(t, "Users, by username", users(ctx, t, s), want)
}
