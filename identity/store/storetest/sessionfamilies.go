package storetest

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

// testSessionFamilies: a family keeps the session it was granted through;
// SessionRefreshFamilies finds exactly that session's families, oldest
// first, revoked ones included, and none for an empty session id (the
// families of other grants).
func testSessionFamilies(t *testing.T, s store.BrowserStore) {
	ctx := t.Context()
	r, ok := s.(store.Refresh)
	if !ok {
		t.Skip("the store has no refresh role")
	}
	mk := func(id, sid string, created time.Time) store.RefreshFamily {
		f := family(id)
		f.SessionID, f.Created = sid, created
		if err := r.CreateRefreshFamily(ctx, f, store.FamilyBound{}); err != nil {
			t.Fatalf("CreateRefreshFamily(%q): %v", id, err)
		}
		return f
	}
	mk("sf-b", "sid-1", t0.Add(time.Second))
	mk("sf-a", "sid-1", t0)
	mk("sf-other", "sid-2", t0)
	mk("sf-none", "", t0)
	mk("sf-prefix", "sid-10", t0)
	if err := r.RevokeRefreshFamily(ctx, "sf-b", t0.Add(time.Minute), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.SessionRefreshFamilies(ctx, "sid-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "sf-a" || got[1].ID != "sf-b" || got[0].SessionID != "sid-1" ||
		got[1].RevokedAt.IsZero() || got[0].ClientID != "demo-app" {
		t.Fatalf("SessionRefreshFamilies(sid-1) = %+v", got)
	}
	one, err := r.RefreshFamily(ctx, "sf-other")
	if err != nil || one.SessionID != "sid-2" {
		t.Errorf("RefreshFamily kept session %q, %v", one.SessionID, err)
	}
	if none, err := s.SessionRefreshFamilies(ctx, ""); err != nil || len(none) != 0 {
		t.Errorf("SessionRefreshFamilies(\"\") = %v, %v", none, err)
	}
	if none, err := s.SessionRefreshFamilies(ctx, "sid-unknown"); err != nil || len(none) != 0 {
		t.Errorf("SessionRefreshFamilies(unknown) = %v, %v", none, err)
	}
}
