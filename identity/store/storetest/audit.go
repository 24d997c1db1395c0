package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
)

var auditCases = []testCase{
	{"KeysAddListRetire", testAuditKeys},
	{"KeysApartFromSigningKeys", testAuditKeysApart},
	{"Checkpoints", testAuditCheckpoints},
	{"CheckpointsEmpty", testAuditCheckpointsEmpty},
}

// auditKey is an audit key called id created at created, signing from then.
func auditKey(id string, created time.Time) store.AuditKey {
	return store.AuditKey{ID: id, Algorithm: "EdDSA", Public: []byte("pkix der of " + id),
		Private: []byte("sealed pkcs8 der of " + id), Created: created, SignFrom: created}
}

func normAuditKey(t *testing.T, k store.AuditKey) store.AuditKey {
	k.Created = utc(t, "Created", k.Created)
	k.SignFrom = utc(t, "SignFrom", k.SignFrom)
	k.RetireAt = utc(t, "RetireAt", k.RetireAt)
	return k
}

func auditKeys(t *testing.T, s store.Store) []store.AuditKey {
	t.Helper()
	ks, err := s.AuditKeys(Context(t))
	if err != nil {
		t.Fatalf("AuditKeys: %v", err)
	}
	var out []store.AuditKey
	for _, k := range ks {
		out = append(out, normAuditKey(t, k))
	}
	return out
}

func testAuditKeys(t *testing.T, s store.Store) {
	ctx := Context(t)
	if ks := auditKeys(t, s); len(ks) != 0 {
		t.Fatalf("AuditKeys of an empty store: %+v", ks)
	}
	newer := auditKey("audit-b", t0)
	older := auditKey("audit-a", t0.Add(-time.Hour))
	older.RetireAt = t0
	for _, k := range []store.AuditKey{newer, older} {
		wantErr(t, "AddAuditKey", s.AddAuditKey(ctx, k), nil)
	}
	wantErr(t, "AddAuditKey twice", s.AddAuditKey(ctx, auditKey("audit-b", t0.Add(time.Hour))), store.ErrAlreadyExists)
	equal(t, "AuditKeys, oldest first", auditKeys(t, s), []store.AuditKey{older, newer})

	wantErr(t, "RetireAuditKey", s.RetireAuditKey(ctx, "audit-b", t0.Add(90*24*time.Hour)), nil)
	newer.RetireAt = t0.Add(90 * 24 * time.Hour)
	equal(t, "AuditKeys after RetireAuditKey", auditKeys(t, s), []store.AuditKey{older, newer})
	wantErr(t, "RetireAuditKey of a missing key", s.RetireAuditKey(ctx, "audit-x", t0), store.ErrNotFound)
}

func testAuditKeysApart(t *testing.T, s store.Store) {
	ctx := Context(t)
	wantErr(t, "AddSigningKey", s.AddSigningKey(ctx, signingKey("k-1", t0)), nil)
	// The same id in both is no conflict: they are apart.
	wantErr(t, "AddAuditKey", s.AddAuditKey(ctx, auditKey("k-1", t0)), nil)
	if ks := keys(ctx, t, s); len(ks) != 1 || ks[0].ID != "k-1" || ks[0].Algorithm != "RS256" {
		t.Errorf("SigningKeys: %+v, want the signing key alone", ks)
	}
	if ks := auditKeys(t, s); len(ks) != 1 || ks[0].Algorithm != "EdDSA" {
		t.Errorf("AuditKeys: %+v, want the audit key alone", ks)
	}
	wantErr(t, "DeleteSigningKey", s.DeleteSigningKey(ctx, "k-1"), nil)
	if ks := auditKeys(t, s); len(ks) != 1 {
		t.Errorf("deleting a signing key took the audit key of its id: %+v", ks)
	}
}

func checkpoint(instance, run string, seq uint64, at time.Time) store.AuditCheckpoint {
	h := hash(fmt.Sprint(instance, run, seq))
	return store.AuditCheckpoint{Instance: instance, Run: run, Seq: seq, Hash: h, Time: at,
		KeyID: "audit-a", JWS: "header.payload.sig-" + run}
}

func normCheckpoint(t *testing.T, c store.AuditCheckpoint) store.AuditCheckpoint {
	c.Time = utc(t, "Time", c.Time)
	return c
}

func testAuditCheckpoints(t *testing.T, s store.Store) {
	ctx := Context(t)
	// Stored in this order; the times do not say it (a clock set back).
	a1 := checkpoint("gw-1", "run-a", 7, t0)
	b1 := checkpoint("gw-2", "run-b", 3, t0.Add(time.Minute))
	a2 := checkpoint("gw-1", "run-a", 12, t0.Add(2*time.Minute))
	a2.Final = true
	c1 := checkpoint("gw-1", "run-c", 2, t0.Add(-time.Hour))
	c1.Seq = 1<<63 - 1
	for _, c := range []store.AuditCheckpoint{a1, b1, a2, c1} {
		wantErr(t, "AddAuditCheckpoint", s.AddAuditCheckpoint(ctx, c), nil)
	}
	dup := checkpoint("gw-1", "run-a", 12, t0.Add(3*time.Minute))
	wantErr(t, "AddAuditCheckpoint of a taken seq", s.AddAuditCheckpoint(ctx, dup), store.ErrAlreadyExists)

	got, err := s.AuditCheckpoints(ctx)
	wantErr(t, "AuditCheckpoints", err, nil)
	for i := range got {
		got[i] = normCheckpoint(t, got[i])
	}
	equal(t, "AuditCheckpoints, in the order stored", got, []store.AuditCheckpoint{a1, b1, a2, c1})

	last, err := s.LastAuditCheckpoint(ctx, "gw-1")
	wantErr(t, "LastAuditCheckpoint", err, nil)
	equal(t, "LastAuditCheckpoint of gw-1: the one stored last, not the latest time", normCheckpoint(t, last), c1)
	last, err = s.LastAuditCheckpoint(ctx, "gw-2")
	wantErr(t, "LastAuditCheckpoint", err, nil)
	equal(t, "LastAuditCheckpoint of gw-2", normCheckpoint(t, last), b1)
	_, err = s.LastAuditCheckpoint(ctx, "gw-3")
	wantErr(t, "LastAuditCheckpoint of an instance with none", err, store.ErrNotFound)
}

func testAuditCheckpointsEmpty(t *testing.T, s store.Store) {
	ctx := Context(t)
	got, err := s.AuditCheckpoints(ctx)
	wantErr(t, "AuditCheckpoints", err, nil)
	if len(got) != 0 {
		t.Errorf("AuditCheckpoints of an empty store: %+v", got)
	}
	if err := s.AddAuditCheckpoint(ctx, checkpoint("gw-1", "r", 1<<63, t0)); err == nil {
		t.Error("AddAuditCheckpoint took seq 2^63, which the store cannot hold")
	}
}
