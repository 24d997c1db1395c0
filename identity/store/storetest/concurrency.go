package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var concurrencyCases = []testCase{
	{"RotateSameToken", func(t *testing.T, s store.Store) { RotateConcurrently(t, s) }},
	{"MixedWrites", testConcurrentMixedWrites},
	{"RevokeRacesRotate", testConcurrentRevokeRacesRotate},
	{"AdmitSameKey", func(t *testing.T, s store.Store) { AdmitConcurrently(t, s) }},
}

// Rotators is how many goroutines RotateConcurrently starts.
const Rotators = 32

// RotateConcurrently has Rotators goroutines rotate the same refresh token at
// once, spread over stores (several Stores sharing one database, as several
// processes would): first each with a child of its own, then all with the
// same child (as the identity server's derived successors are). Exactly one
// must succeed and every other get ErrAlreadyRotated; the parent names the
// winner's child as its successor, and only the winner's child and access
// token are stored. The stores must share an empty database.
func RotateConcurrently(t *testing.T, stores ...store.Store) {
	if len(stores) == 0 {
		t.Fatal("RotateConcurrently: no store")
	}
	rotateRace(t, stores, "fam-distinct", false)
	rotateRace(t, stores, "fam-same", true)
}

// rotateRace is one race of RotateConcurrently, on the new family famID.
func rotateRace(t *testing.T, stores []store.Store, famID string, sameChild bool) {
	t.Helper()
	ctx := Context(t)
	s := stores[0]
	_, first, at0 := mustCreateFamily(ctx, t, s, famID)
	now := t0.Add(30 * time.Minute) // at0 has not expired
	children := make([]store.RefreshToken, Rotators)
	ats := make([]store.IssuedAccessToken, Rotators)
	for i := range children {
		name := fmt.Sprintf("%s/child-%d", famID, i)
		if sameChild {
			name = famID + "/child"
		}
		children[i] = child(first, name, now)
		ats[i] = store.IssuedAccessToken{JTI: fmt.Sprintf("%s/at-%d", famID, i), ExpiresAt: now.Add(time.Hour)}
	}

	errs := concurrently(ctx, t, Rotators, func(i int) error {
		return stores[i%len(stores)].RotateRefreshToken(ctx, first.Hash, children[i], ats[i], now)
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: goroutines %d and %d both rotated the token", famID, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrAlreadyRotated):
			t.Errorf("%s: goroutine %d: %v, want %v", famID, i, err, store.ErrAlreadyRotated)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no goroutine rotated the token", famID)
	}

	for _, s := range stores {
		parent, _ := readToken(ctx, t, s, first.Hash)
		if !bytes.Equal(parent.Successor, children[winner].Hash) {
			t.Errorf("%s: the parent's successor is not the winner's child", famID)
		}
		for i, c := range children {
			_, _, err := s.RefreshToken(ctx, c.Hash)
			if i == winner || sameChild {
				wantErr(t, famID+": RefreshToken of the winner's child", err, nil)
			} else {
				wantErr(t, fmt.Sprintf("%s: RefreshToken of goroutine %d's child", famID, i), err, store.ErrNotFound)
			}
		}
	}
	// Only the winner's access token was recorded: revoking the family
	// revokes it and the first one, and no other.
	wantErr(t, "RevokeRefreshFamily", s.RevokeRefreshFamily(ctx, famID, now), nil)
	revoked := revokedJTIs(ctx, t, s, now)
	for jti := range revoked {
		if !strings.HasPrefix(jti, famID+"/") {
			delete(revoked, jti) // another race's
		}
	}
	equal(t, famID+": revoked access tokens", revoked, map[string]bool{ats[winner].JTI: true, at0.JTI: true})
}

// testConcurrentMixedWrites: many goroutines write every kind of record, and
// read, at once; none fails.
func testConcurrentMixedWrites(t *testing.T, s store.Store) {
	ctx := Context(t)
	const workers, rounds = 16, 6
	now := t0.Add(time.Minute)
	var secrets [workers][]byte
	errs := concurrently(ctx, t, workers, func(w int) error {
		for r := range rounds {
			id := fmt.Sprintf("w%d-r%d", w, r)
			u := user(id)
			if err := s.CreateUser(ctx, u); err != nil {
				return err
			}
			f, first, at0 := family(id)
			f.Subject = u.Subject
			if err := s.CreateRefreshFamily(ctx, f, first, at0); err != nil {
				return err
			}
			c := child(first, id+"/1", now)
			if err := s.RotateRefreshToken(ctx, first.Hash, c,
				store.IssuedAccessToken{JTI: id + "/at1", ExpiresAt: now.Add(time.Hour)}, now); err != nil {
				return err
			}
			if err := s.RecordAccessToken(ctx, id, store.IssuedAccessToken{JTI: id + "/grace", ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
			if _, _, err := s.RefreshToken(ctx, c.Hash); err != nil {
				return err
			}
			if err := s.RevokeAccessToken(ctx, id+"/single", now.Add(time.Hour), now); err != nil {
				return err
			}
			if r%2 == 0 {
				if err := s.RevokeRefreshFamily(ctx, id, now); err != nil {
					return err
				}
			}
			u.DisplayName = "updated " + id
			if err := s.UpdateUser(ctx, u); err != nil {
				return err
			}
			if _, err := s.UserBySubject(ctx, u.Subject); err != nil {
				return err
			}
			if err := s.AddSigningKey(ctx, signingKey(id, now)); err != nil {
				return err
			}
			sec, err := s.Secret(ctx, "shared", func() ([]byte, error) { return []byte(id), nil })
			if err != nil {
				return err
			}
			if secrets[w] != nil && !bytes.Equal(sec, secrets[w]) {
				return fmt.Errorf("secret changed from %q to %q", secrets[w], sec)
			}
			secrets[w] = sec
			if _, err := s.Revocations(ctx, now); err != nil {
				return err
			}
		}
		return nil
	})
	for w, err := range errs {
		wantErr(t, fmt.Sprintf("worker %d", w), err, nil)
	}
	for w := range secrets {
		if !bytes.Equal(secrets[w], secrets[0]) {
			t.Errorf("workers 0 and %d got different secrets", w)
		}
	}

	if us := users(ctx, t, s); len(us) != workers*rounds {
		t.Errorf("%d users, want %d", len(us), workers*rounds)
	}
	if ks := keys(ctx, t, s); len(ks) != workers*rounds {
		t.Errorf("%d signing keys, want %d", len(ks), workers*rounds)
	}
	// Each round revoked its single token; each even round its family's
	// three access tokens too.
	want := workers*rounds + workers*((rounds+1)/2)*3
	if got := len(revokedJTIs(ctx, t, s, now)); got != want {
		t.Errorf("%d revocations, want %d", got, want)
	}
}

// testConcurrentRevokeRacesRotate: a family revoked while one of its tokens
// rotates ends consistent: either the rotation lost (ErrFamilyRevoked,
// nothing stored) or it won and its child and access token were revoked with
// the family.
func testConcurrentRevokeRacesRotate(t *testing.T, s store.Store) {
	ctx := Context(t)
	const rounds = 16
	now := t0.Add(time.Minute)
	for r := range rounds {
		id := fmt.Sprintf("fam%d", r)
		_, first, at0 := mustCreateFamily(ctx, t, s, id)
		c := child(first, id+"/1", now)
		at1 := store.IssuedAccessToken{JTI: id + "/at1", ExpiresAt: now.Add(time.Hour)}
		errs := concurrently(ctx, t, 2, func(i int) error {
			if i == 0 {
				return s.RotateRefreshToken(ctx, first.Hash, c, at1, now)
			}
			return s.RevokeRefreshFamily(ctx, id, now)
		})
		rotateErr, revokeErr := errs[0], errs[1]
		wantErr(t, "RevokeRefreshFamily", revokeErr, nil)

		parent, fam := readToken(ctx, t, s, first.Hash)
		if fam.RevokedAt.IsZero() {
			t.Errorf("round %d: family not revoked", r)
		}
		revoked := revokedJTIs(ctx, t, s, now)
		if !revoked[at0.JTI] {
			t.Errorf("round %d: first access token not revoked", r)
		}
		_, _, childErr := s.RefreshToken(ctx, c.Hash)
		switch {
		case rotateErr == nil:
			if !bytes.Equal(parent.Successor, c.Hash) {
				t.Errorf("round %d: rotation won, but the parent's successor is not the child", r)
			}
			wantErr(t, "RefreshToken of the child of a winning rotation", childErr, nil)
			if !revoked[at1.JTI] {
				t.Errorf("round %d: rotation won, but its access token was not revoked with the family", r)
			}
		case errors.Is(rotateErr, store.ErrFamilyRevoked):
			if !parent.RotatedAt.IsZero() || parent.Successor != nil {
				t.Errorf("round %d: rotation lost, but the parent is rotated: %+v", r, parent)
			}
			wantErr(t, "RefreshToken of the child of a losing rotation", childErr, store.ErrNotFound)
			if revoked[at1.JTI] {
				t.Errorf("round %d: rotation lost, but its access token was recorded", r)
			}
		default:
			t.Fatalf("round %d: RotateRefreshToken: %v, want nil or %v", r, rotateErr, store.ErrFamilyRevoked)
		}
	}
}
