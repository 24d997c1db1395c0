package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// testRefreshState: RefreshState reads a family as RefreshFamily does,
// with its subject's user as UserBySubject reads it (nil for a subject
// without one), and SessionsEnded as AccessTokenRevoked tells it for the
// subject at the family's AuthTime: true for a family authenticated
// before RevokeSubject, false for one authenticated after and for one
// without an AuthTime. An unknown family is ErrNotFound.
func testRefreshState(t *testing.T, s store.Store) {
	ctx := Context(t)
	alice := user("alice")
	wantErr(t, "CreateUser alice", s.CreateUser(ctx, alice), nil)
	check := func(id string, wantUser *store.User, wantEnded bool) {
		t.Helper()
		got, err := s.RefreshState(ctx, id)
		wantErr(t, "RefreshState "+id, err, nil)
		equal(t, "RefreshState "+id+" Family", normFamily(t, got.Family), readFamily(ctx, t, s, id))
		switch {
		case wantUser == nil && got.User != nil:
			t.Errorf("RefreshState %s: User %+v, want none", id, *got.User)
		case wantUser != nil && got.User == nil:
			t.Errorf("RefreshState %s: no User, want %s", id, wantUser.Username)
		case wantUser != nil:
			equal(t, "RefreshState "+id+" User", normUser(t, *got.User), normUser(t, *wantUser))
		}
		if got.SessionsEnded != wantEnded {
			t.Errorf("RefreshState %s: SessionsEnded %v, want %v", id, got.SessionsEnded, wantEnded)
		}
		if f := got.Family; !f.AuthTime.IsZero() {
			revoked, err := s.AccessTokenRevoked(ctx, "", "", f.Subject, f.AuthTime)
			wantErr(t, "AccessTokenRevoked", err, nil)
			if revoked != got.SessionsEnded {
				t.Errorf("RefreshState %s: SessionsEnded %v, AccessTokenRevoked at its AuthTime %v", id, got.SessionsEnded, revoked)
			}
		}
	}
	stored, err := s.UserBySubject(ctx, alice.Subject)
	wantErr(t, "UserBySubject", err, nil)

	createFamilyOf(ctx, t, s, "before", alice.Subject)
	createFamilyOf(ctx, t, s, "nobody", "subject-without-user")
	check("before", &stored, false)
	check("nobody", nil, false)
	_, err = s.RefreshState(ctx, "unknown")
	wantErr(t, "RefreshState of an unknown family", err, store.ErrNotFound)

	ended := t0.Add(time.Hour)
	wantErr(t, "RevokeSubject", s.RevokeSubject(ctx, alice.Subject, ended, ended.Add(time.Hour)), nil)
	after := family("after")
	after.Subject, after.AuthTime, after.Created = alice.Subject, ended.Add(time.Second), ended.Add(time.Second)
	wantErr(t, "CreateRefreshFamily after", s.CreateRefreshFamily(ctx, after, store.FamilyBound{}), nil)
	noAuth := family("no-auth-time")
	noAuth.Subject, noAuth.AuthTime = alice.Subject, time.Time{}
	wantErr(t, "CreateRefreshFamily no-auth-time", s.CreateRefreshFamily(ctx, noAuth, store.FamilyBound{}), nil)
	check("before", &stored, true)
	check("after", &stored, false)
	check("no-auth-time", &stored, false)
}
