package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var concurrencyCases = []testCase{
	{"RotateSameFamily", func(t *testing.T, s store.Store) { RotateConcurrently(t, s) }},
	{"MixedWrites", testConcurrentMixedWrites},
	{"RevokeRacesRotate", testConcurrentRevokeRacesRotate},
	{"AdmitSameKey", func(t *testing.T, s store.Store) { AdmitConcurrently(t, s) }},
	{"CreateRacesDelete", testConcurrentCreateRacesDelete},
}

// testConcurrentCreateRacesDelete: a user created with a subject while the
// user who holds it is deleted never gets it: the create finds the subject
// taken (ErrAlreadyExists) or retired (ErrSubjectDeleted), whichever
// commits first, and no user is left with it.
func testConcurrentCreateRacesDelete(t *testing.T, s store.Store) {
	ctx := Context(t)
	for i := range 24 {
		old := user(fmt.Sprintf("old-%d", i))
		wantErr(t, "CreateUser", s.CreateUser(ctx, old), nil)
		newer := user(fmt.Sprintf("new-%d", i))
		newer.Subject = old.Subject
		errs := make(chan error, 2)
		go func() {
			_, err := s.DeleteUser(ctx, old.Username, t0, t0.Add(time.Hour))
			errs <- err
		}()
		go func() { errs <- s.CreateUser(ctx, newer) }()
		for range 2 {
			if err := <-errs; err != nil && !errors.Is(err, store.ErrAlreadyExists) && !errors.Is(err, store.ErrSubjectDeleted) {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		if u, err := s.UserBySubject(ctx, old.Subject); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: the retired subject belongs to %q (%v)", i, u.Username, err)
		}
	}
}

// Rotators is how many goroutines RotateConcurrently starts.
const Rotators = 32

// RotateConcurrently has Rotators goroutines rotate the same refresh
// family from the same generation at once, spread over stores (several
// Stores sharing one database, as several processes would): first each
// with a next token, expiry and time of its own, then all with the same
// ones (as the identity server's derived successors are). Then, if the
// stores are store.LegacySeeders, it has them convert the same legacy
// token at once. Each time, exactly one must succeed and every other get
// ErrAlreadyRotated, and every store must read the family as the winner
// left it, with nothing of the losers'. The stores must share an empty
// database.
func RotateConcurrently(t *testing.T, stores ...store.Store) {
	if len(stores) == 0 {
		t.Fatal("RotateConcurrently: no store")
	}
	t.Run("DistinctNext", func(t *testing.T) { rotateRace(t, stores, "fam-distinct", false) })
	t.Run("SameNext", func(t *testing.T) { rotateRace(t, stores, "fam-same", true) })
	t.Run("ConvertLegacy", func(t *testing.T) { convertRace(t, stores) })
}

// racer is what goroutine i of a race rotates to: the same for all when
// same is set.
func racer(famID string, i int, same bool) (next []byte, now time.Time) {
	if same {
		return hash(famID + "/next"), t0.Add(30 * time.Minute)
	}
	return hash(fmt.Sprintf("%s/next-%d", famID, i)), t0.Add(30*time.Minute + time.Duration(i)*time.Millisecond)
}

// oneWinner checks that exactly one of errs is nil and the others are
// ErrAlreadyRotated, and returns the index of the nil one.
func oneWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: goroutines %d and %d both won", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrAlreadyRotated):
			t.Errorf("%s: goroutine %d: %v, want %v", what, i, err, store.ErrAlreadyRotated)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no goroutine won", what)
	}
	return winner
}

// rotateRace is a race of RotateConcurrently on the new family famID,
// from its generation 2.
func rotateRace(t *testing.T, stores []store.Store, famID string, same bool) {
	ctx := Context(t)
	f := mustRotate(ctx, t, stores[0], mustCreateFamily(ctx, t, stores[0], famID), t0.Add(time.Minute))
	errs := concurrently(ctx, t, Rotators, func(i int) error {
		next, now := racer(famID, i, same)
		return stores[i%len(stores)].RotateRefreshFamily(ctx, famID, f.Generation, next, now.Add(tokenLife), now)
	})
	w := oneWinner(t, "RotateRefreshFamily", errs)
	next, now := racer(famID, w, same)
	want := f
	want.Previous, want.Current, want.Generation = f.Current, next, f.Generation+1
	want.CurrentExpiresAt, want.RotatedAt = now.Add(tokenLife), now
	for i, s := range stores {
		checkFamily(ctx, t, s, fmt.Sprintf("family read from store %d", i), want)
	}
}

// convertRace is the race of RotateConcurrently on a legacy family.
func convertRace(t *testing.T, stores []store.Store) {
	ls, ok := stores[0].(store.LegacySeeder)
	if !ok {
		t.Skipf("%T does not implement store.LegacySeeder: it cannot hold legacy families", stores[0])
	}
	ctx := Context(t)
	l := legacyFamily("fam-legacy")
	mustSeed(ctx, t, ls, l)
	salt := func(i int) []byte { return []byte(fmt.Sprintf("salt-%d", i)) }
	errs := concurrently(ctx, t, Rotators, func(i int) error {
		next, now := racer(l.family.ID, i, false)
		return stores[i%len(stores)].ConvertLegacyFamily(ctx, l.current().Hash, salt(i), next, now.Add(tokenLife), now)
	})
	w := oneWinner(t, "ConvertLegacyFamily", errs)
	next, now := racer(l.family.ID, w, false)
	want := converted(l, salt(w), next, now)
	for i, s := range stores {
		checkLegacy(ctx, t, s, fmt.Sprintf("legacy family read from store %d", i), want)
	}
}

// testConcurrentMixedWrites: many goroutines write every kind of record,
// and read, at once; none fails, and every write is kept.
func testConcurrentMixedWrites(t *testing.T, s store.Store) {
	ctx := Context(t)
	ls, _ := s.(store.LegacySeeder)
	const workers, rounds = 16, 6
	now := t0.Add(time.Minute)
	until := now.Add(time.Hour)
	var secrets [workers][]byte
	errs := concurrently(ctx, t, workers, func(w int) error {
		for r := range rounds {
			id := fmt.Sprintf("w%d-r%d", w, r)
			u := user(id)
			if err := s.CreateUser(ctx, u); err != nil {
				return err
			}
			f := family(id)
			f.Subject = u.Subject
			if err := s.CreateRefreshFamily(ctx, f, store.FamilyBound{}); err != nil {
				return err
			}
			next := rotated(f, now)
			if err := s.RotateRefreshFamily(ctx, id, 1, next.Current, next.CurrentExpiresAt, now); err != nil {
				return err
			}
			if got, err := s.RefreshFamily(ctx, id); err != nil {
				return err
			} else if got.Generation != 2 || !bytes.Equal(got.Current, next.Current) {
				return fmt.Errorf("family %q after its rotation: %+v", id, got)
			}
			if ls != nil {
				l := legacyFamily(id + "-legacy")
				l.family.Subject = u.Subject
				if err := ls.SeedLegacyFamily(ctx, l.family, l.tokens, l.ats); err != nil {
					return err
				}
				if err := s.ConvertLegacyFamily(ctx, l.current().Hash, []byte("salt"), gen(id+"-legacy", 2), until, now); err != nil {
					return err
				}
				if _, _, err := s.LegacyRefreshToken(ctx, l.current().Hash); err != nil {
					return err
				}
			}
			if err := s.RevokeAccessToken(ctx, id+"/single", until, now); err != nil {
				return err
			}
			if r%2 == 0 {
				if err := s.RevokeRefreshFamily(ctx, id, now, until); err != nil {
					return err
				}
			}
			if r == rounds-1 {
				if err := s.RevokeSubject(ctx, u.Subject, now, until); err != nil {
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
			if _, err := s.RevocationsSince(ctx, now, now); err != nil {
				return err
			}
			if ok, err := s.AccessTokenRevoked(ctx, id+"/single", id, u.Subject, now); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("access token %q/single not revoked", id)
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
	// Each round revoked its single token; each even round its family;
	// the last round its subject, with its family, and its legacy family
	// with its two access tokens.
	want := workers * (rounds + (rounds+1)/2 + 2)
	if ls != nil {
		want += workers * 3
	}
	if got := len(revokedKeys(ctx, t, s, now)); got != want {
		t.Errorf("%d revocations, want %d", got, want)
	}
}

// testConcurrentRevokeRacesRotate: a family revoked (by itself or with its
// subject) while it rotates, or converts, ends consistent: either the
// rotation lost with ErrFamilyRevoked and the family is as before, or it
// won and the family is rotated; either way the family is revoked at now,
// with its revocation (and, for a legacy family, its access tokens'), and
// rotates no more.
func testConcurrentRevokeRacesRotate(t *testing.T, s store.Store) {
	const rounds = 16
	now, until := t0.Add(time.Minute), t0.Add(time.Hour)
	revokeRace := func(ctx context.Context, t *testing.T, r int, id, subject string, rotate func() error) (rotateErr error) {
		t.Helper()
		errs := concurrently(ctx, t, 2, func(i int) error {
			switch {
			case i == 0:
				return rotate()
			case r%2 == 1:
				return s.RevokeSubject(ctx, subject, now, until)
			default:
				return s.RevokeRefreshFamily(ctx, id, now, until)
			}
		})
		wantErr(t, fmt.Sprintf("round %d: revoking", r), errs[1], nil)
		if errs[0] != nil && !errors.Is(errs[0], store.ErrFamilyRevoked) {
			t.Fatalf("round %d: rotating: %v, want nil or %v", r, errs[0], store.ErrFamilyRevoked)
		}
		return errs[0]
	}

	t.Run("Constant", func(t *testing.T) {
		ctx := Context(t)
		for r := range rounds {
			f := mustCreateFamily(ctx, t, s, fmt.Sprintf("fam%d", r))
			next := rotated(f, now)
			err := revokeRace(ctx, t, r, f.ID, f.Subject, func() error {
				return s.RotateRefreshFamily(ctx, f.ID, 1, next.Current, next.CurrentExpiresAt, now)
			})
			want := f
			if err == nil {
				want = next
			}
			want.RevokedAt = now
			checkFamily(ctx, t, s, fmt.Sprintf("round %d: family", r), want)
			if !revokedKeys(ctx, t, s, now)["family:"+f.ID] {
				t.Errorf("round %d: the family's revocation is not listed", r)
			}
			err = s.RotateRefreshFamily(ctx, f.ID, want.Generation, hash("after"), now.Add(tokenLife), now)
			wantErr(t, fmt.Sprintf("round %d: rotating after the revocation", r), err, store.ErrFamilyRevoked)
		}
	})
	t.Run("Legacy", func(t *testing.T) {
		ctx := Context(t)
		ls := seeder(t, s)
		for r := range rounds {
			l := legacyFamily(fmt.Sprintf("legacy%d", r))
			mustSeed(ctx, t, ls, l)
			want := converted(l, []byte("salt"), gen(l.family.ID, 2), now)
			err := revokeRace(ctx, t, r, l.family.ID, l.family.Subject, func() error {
				return s.ConvertLegacyFamily(ctx, l.current().Hash, want.family.Salt, want.family.Current, want.family.CurrentExpiresAt, now)
			})
			if err != nil {
				want = l
			}
			want.family.RevokedAt = now
			checkLegacy(ctx, t, s, fmt.Sprintf("round %d: legacy family", r), want)
			got := revokedKeys(ctx, t, s, now)
			for _, k := range []string{"family:" + l.family.ID, "jti:" + l.ats[0].JTI, "jti:" + l.ats[1].JTI} {
				if !got[k] {
					t.Errorf("round %d: %s is not revoked", r, k)
				}
			}
		}
	})
}
