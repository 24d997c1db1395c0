package keys_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

var _ audit.Signer = (*keys.AuditKeys)(nil)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// signCheckpoint writes a run of one record through a writer signing with
// ak and returns the log and the run's checkpoints.
func signCheckpoint(t *testing.T, ak *keys.AuditKeys) ([]byte, []audit.Checkpoint) {
	t.Helper()
	var buf bytes.Buffer
	var cps []audit.Checkpoint
	w, err := audit.NewWriter(audit.Options{Instance: "gw-1", Sink: audit.LineSink{W: &buf}, Signer: ak,
		OnCheckpoint: func(c audit.Checkpoint) { cps = append(cps, c) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append("authentication", audit.String("sub", "alice")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), cps
}

func verifyLog(t *testing.T, st store.Store, log []byte) *audit.Report {
	t.Helper()
	pubs, err := keys.AuditPublicKeys(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify([]audit.File{{Name: "audit.log", R: bytes.NewReader(log)}}, audit.VerifyOptions{Keys: pubs})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestAuditKeysSignAndRotate: the first Sync creates a sealed Ed25519 key
// of its own kind that signs checkpoints the store's public keys verify;
// at the end of its period a new key takes over, and the old one stays.
func TestAuditKeysSignAndRotate(t *testing.T) {
	st := openStore(t)
	kek := bytes.Repeat([]byte{7}, keys.EncryptionKeySize)
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	ak, err := keys.NewAuditKeys(st, keys.AuditPolicy{Period: 24 * time.Hour, EncryptionKey: kek}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ak.Sync(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	first := ak.KeyID()
	if !strings.HasPrefix(first, keys.AuditKeyPrefix) {
		t.Fatalf("audit key id %q lacks the prefix %q", first, keys.AuditKeyPrefix)
	}
	stored, _ := st.AuditKeys(t.Context())
	if len(stored) != 1 || !bytes.HasPrefix(stored[0].Private, []byte("gatehouse-kek-v1:")) {
		t.Fatalf("the audit key is not sealed at rest: %+v", stored)
	}
	if sk, _ := st.SigningKeys(t.Context()); len(sk) != 0 {
		t.Fatalf("an audit key among the signing keys: %+v", sk)
	}
	log, cps := signCheckpoint(t, ak)
	if rep := verifyLog(t, st, log); !rep.OK() || rep.Checkpoints != 1 {
		t.Fatalf("a checkpoint of the audit key does not verify: %+v", rep.Problems)
	}
	if len(cps) != 1 || cps[0].KeyID != first || cps[0].JWS == "" {
		t.Fatalf("checkpoint handed to the store: %+v", cps)
	}

	// Within the period the key stays; past it, a new one signs.
	if err := ak.Sync(t.Context(), now.Add(23*time.Hour)); err != nil || ak.KeyID() != first {
		t.Fatalf("rotated within the period: %q, %v", ak.KeyID(), err)
	}
	if err := ak.Sync(t.Context(), now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ak.KeyID() == first {
		t.Fatal("the audit key was not rotated at the end of its period")
	}
	pubs, err := keys.AuditPublicKeys(t.Context(), st)
	if err != nil || len(pubs) != 2 {
		t.Fatalf("public audit keys after a rotation: %d, %v", len(pubs), err)
	}
	// The old log still verifies: the old key is kept.
	if rep := verifyLog(t, st, log); !rep.OK() {
		t.Fatalf("the log of the retired key no longer verifies: %+v", rep.Problems)
	}

	// Another process with the wrong key encryption key cannot sign.
	other, _ := keys.NewAuditKeys(st, keys.AuditPolicy{EncryptionKey: bytes.Repeat([]byte{8}, keys.EncryptionKeySize)}, nil)
	if err := other.Sync(t.Context(), now.Add(25*time.Hour)); err == nil {
		t.Fatal("a sealed audit key opened with the wrong key encryption key")
	}
}

// TestAuditKeysSignWithTheHeadersKey: a rotation between KeyID and Sign
// still signs with the key the header names. It failed when Sign used the
// current key.
func TestAuditKeysSignWithTheHeadersKey(t *testing.T) {
	st := openStore(t)
	now := time.Now()
	ak, _ := keys.NewAuditKeys(st, keys.AuditPolicy{}, nil)
	if err := ak.Sync(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	rotating := &rotatingSigner{AuditKeys: ak, rotate: func() {
		if _, err := ak.Rotate(context.Background(), now); err != nil {
			t.Error(err)
		}
	}}
	var buf bytes.Buffer
	w, err := audit.NewWriter(audit.Options{Instance: "gw-1", Sink: audit.LineSink{W: &buf}, Signer: rotating})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := verifyLog(t, st, buf.Bytes()); !rep.OK() {
		t.Fatalf("checkpoint signed across a rotation: %+v", rep.Problems)
	}
}

// rotatingSigner rotates the audit keys after KeyID, before Sign.
type rotatingSigner struct {
	*keys.AuditKeys
	rotate func()
}

func (s *rotatingSigner) KeyID() string {
	kid := s.AuditKeys.KeyID()
	s.rotate()
	return kid
}

// TestAuditPublicKeysRefuseAnotherKey: a public key stored under another
// key's id is refused, and the JWKS names every key.
func TestAuditPublicKeysRefuseAnotherKey(t *testing.T) {
	st := openStore(t)
	ak, _ := keys.NewAuditKeys(st, keys.AuditPolicy{}, nil)
	if err := ak.Sync(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	raw, err := keys.AuditJWKS(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []keys.AuditJWK }
	if err := json.Unmarshal(raw, &set); err != nil || len(set.Keys) != 1 || set.Keys[0].Kid != ak.KeyID() ||
		set.Keys[0].Kty != "OKP" || set.Keys[0].Crv != "Ed25519" {
		t.Fatalf("audit JWKS: %s, %v", raw, err)
	}
	k, _ := st.AuditKeys(t.Context())
	forged := k[0]
	forged.ID = keys.AuditKeyPrefix + "another"
	if err := st.AddAuditKey(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.AuditPublicKeys(t.Context(), st); err == nil {
		t.Fatal("a public key stored under another id was accepted")
	}
}
