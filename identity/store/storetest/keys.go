package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var signingKeyCases = []testCase{
	{"Empty", testKeysEmpty},
	{"AddAndList", testKeysAddAndList},
	{"AddDuplicate", testKeysAddDuplicate},
	{"Update", testKeysUpdate},
	{"UpdateMissing", testKeysUpdateMissing},
	{"Delete", testKeysDelete},
}

// signingKey is a key called id created at created, signing from then on.
func signingKey(id string, created time.Time) store.SigningKey {
	return store.SigningKey{
		ID:        id,
		Algorithm: "RS256",
		Private:   []byte("pkcs8 der of " + id),
		Created:   created,
		SignFrom:  created,
	}
}

// keys lists the stored keys, normalised.
func keys(ctx context.Context, t *testing.T, s store.Store) []store.SigningKey {
	t.Helper()
	ks, err := s.SigningKeys(ctx)
	if err != nil {
		t.Fatalf("SigningKeys: %v", err)
	}
	var out []store.SigningKey
	for _, k := range ks {
		out = append(out, normKey(t, k))
	}
	return out
}

func testKeysEmpty(t *testing.T, s store.Store) {
	ctx := Context(t)
	if ks := keys(ctx, t, s); len(ks) != 0 {
		t.Errorf("SigningKeys of an empty store: %+v", ks)
	}
}

func testKeysAddAndList(t *testing.T, s store.Store) {
	ctx := Context(t)
	older := signingKey("k-older", t0.Add(-48*time.Hour))
	older.RetireAt = t0.Add(-24 * time.Hour)
	older.RemoveAt = t0.Add(24 * time.Hour)
	newest := signingKey("k-newest", t0)
	newest.SignFrom = t0.Add(time.Hour) // announced before it signs
	middle := signingKey("k-middle", t0.Add(-24*time.Hour))
	for _, k := range []store.SigningKey{newest, older, middle} {
		wantErr(t, "AddSigningKey "+k.ID, s.AddSigningKey(ctx, k), nil)
	}
	equal(t, "SigningKeys, oldest first", keys(ctx, t, s), []store.SigningKey{older, middle, newest})
}

func testKeysAddDuplicate(t *testing.T, s store.Store) {
	ctx := Context(t)
	k := signingKey("k1", t0)
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, k), nil)
	dup := signingKey("k1", t0.Add(time.Hour))
	dup.Private = []byte("other key material")
	wantErr(t, "AddSigningKey with a taken ID", s.AddSigningKey(ctx, dup), store.ErrAlreadyExists)
	equal(t, "SigningKeys", keys(ctx, t, s), []store.SigningKey{k})
}

// testKeysUpdate: an update replaces the schedule and nothing else.
func testKeysUpdate(t *testing.T, s store.Store) {
	ctx := Context(t)
	k := signingKey("k1", t0)
	other := signingKey("k2", t0.Add(time.Minute))
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, k), nil)
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, other), nil)

	upd := store.SigningKey{
		ID:        "k1",
		Algorithm: "ES256",                    // ignored
		Private:   []byte("changed material"), // ignored
		Created:   t0.Add(time.Hour),          // ignored
		SignFrom:  t0.Add(time.Second),
		RetireAt:  t0.Add(90 * 24 * time.Hour),
		RemoveAt:  t0.Add(97 * 24 * time.Hour),
	}
	wantErr(t, "UpdateSigningKey", s.UpdateSigningKey(ctx, upd), nil)
	want := k
	want.SignFrom, want.RetireAt, want.RemoveAt = upd.SignFrom, upd.RetireAt, upd.RemoveAt
	equal(t, "SigningKeys after the update", keys(ctx, t, s), []store.SigningKey{want, other})

	// Zero times unschedule.
	upd.RetireAt, upd.RemoveAt = time.Time{}, time.Time{}
	wantErr(t, "UpdateSigningKey", s.UpdateSigningKey(ctx, upd), nil)
	want.RetireAt, want.RemoveAt = time.Time{}, time.Time{}
	equal(t, "SigningKeys after unscheduling", keys(ctx, t, s), []store.SigningKey{want, other})
}

func testKeysUpdateMissing(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "UpdateSigningKey of a missing key", s.UpdateSigningKey(ctx, signingKey("nope", t0)), store.ErrNotFound)
	if ks := keys(ctx, t, s); len(ks) != 0 {
		t.Errorf("SigningKeys after updating a missing key: %+v", ks)
	}
}

func testKeysDelete(t *testing.T, s store.Store) {
	ctx := Context(t)
	k1, k2 := signingKey("k1", t0), signingKey("k2", t0.Add(time.Minute))
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, k1), nil)
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, k2), nil)
	wantErr(t, "DeleteSigningKey", s.DeleteSigningKey(ctx, "k1"), nil)
	equal(t, "SigningKeys after the delete", keys(ctx, t, s), []store.SigningKey{k2})
	wantErr(t, "DeleteSigningKey again", s.DeleteSigningKey(ctx, "k1"), store.ErrNotFound)
	wantErr(t, "DeleteSigningKey of a missing key", s.DeleteSigningKey(ctx, "nope"), store.ErrNotFound)
	// The ID is free again.
	wantErr(t, "AddSigningKey with a deleted ID", s.AddSigningKey(ctx, k1), nil)
}
