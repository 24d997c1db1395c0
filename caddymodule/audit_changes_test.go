package caddymodule

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// TestAuditChangesDrained: changes stored with a pending audit change
// (as the CLI stores them, from another process) reach the running
// instance's chain within a few polls: a user_change (of a user or of its
// second factors), and an entitlement_change with the set after it where
// the action sets one; a change that an instance claimed and never wrote
// (it died) is written once its claim is stale; every pending change is
// deleted once written, and the log verifies. It failed when the drain loop was not started.
func TestAuditChangesDrained(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	dbPath, logPath := filepath.Join(dir, "gatehouse.db"), filepath.Join(dir, "audit.log")
	st, err := sqlite.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A change that an instance claimed two minutes ago and never wrote.
	made := time.Now().Add(-3 * time.Minute)
	ctx := store.WithAuditChange(t.Context(), &store.AuditChange{ID: "orphan", Time: made, Action: "add"})
	if err := st.CreateUser(ctx, store.User{Username: "olga", Subject: "olga-1", PasswordHash: "x",
		Entitlements: entitle.MustParse("NZX:quotes")}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ClaimAuditChanges(t.Context(), "dead/run", made.Add(time.Minute), made, 10); err != nil || len(got) != 1 {
		t.Fatalf("claiming the orphan: %v, %v", got, err)
	}

	// The default flush delay: the drain deletes a change only once its
	// records are written, not merely queued.
	cfg := bytes.Replace(auditConfig(t, dbPath, fileLog(logPath)), []byte(`,"flush_delay":-1`), nil, 1)
	if bytes.Contains(cfg, []byte("flush_delay")) {
		t.Fatalf("the config still sets flush_delay: %s", cfg)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			caddy.Stop()
		}
	})
	// Changes made while the instance runs.
	ctx = store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c-add", Time: time.Now(), Action: "add"})
	if err := st.CreateUser(ctx, store.User{Username: "alice", Subject: "alice-1", PasswordHash: "x",
		Entitlements: entitle.MustParse("ASX:quotes")}); err != nil {
		t.Fatal(err)
	}
	ctx = store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c-entitle", Time: time.Now(), Action: "entitle"})
	if _, err := st.UpdateEntitlements(ctx, "alice", func(entitle.Set) (entitle.Set, error) {
		return entitle.MustParse("ASX:quotes ASX:depth"), nil
	}, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	u, err := st.User(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	u.Disabled = true
	if err := st.UpdateUser(store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c-disable", Time: time.Now(), Action: "disable"}), u); err != nil {
		t.Fatal(err)
	}
	// The second factors' changes, which the store knows by subject: the
	// change names the user.
	if err := st.ReplaceRecoveryCodes(store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c-codes", Time: time.Now(),
		Action: "mfa_recovery_codes", Username: "alice", Subject: "alice-1"}), "alice-1", [][]byte{[]byte("hash")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.ResetMFA(store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c-mfa-reset", Time: time.Now(),
		Action: "mfa_reset", Username: "alice", Subject: "alice-1"}), "alice-1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending, err := st.PendingAuditChanges(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("changes still pending after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true

	records, err := AuditRecords([]string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range records {
		if r.Kind != audit.KindUserChange && r.Kind != audit.KindEntitlementChange {
			continue
		}
		line := string(r.Kind)
		for _, k := range []string{"change_id", "action", "username", audit.AttrSubject, "by"} {
			v, _ := r.Attr(k)
			s, _ := v.Str()
			line += " " + s
		}
		if v, ok := r.Attr(audit.AttrEntitlements); ok {
			l, _ := v.List()
			line += " [" + strings.Join(l, " ") + "]"
		}
		got = append(got, line)
	}
	want := []string{
		"user_change orphan add olga olga-1 cli", "entitlement_change orphan add olga olga-1 cli [NZX:quotes]",
		"user_change c-add add alice alice-1 cli", "entitlement_change c-add add alice alice-1 cli [ASX:quotes]",
		"user_change c-entitle entitle alice alice-1 cli", "entitlement_change c-entitle entitle alice alice-1 cli [ASX:depth ASX:quotes]",
		"user_change c-disable disable alice alice-1 cli",
		"user_change c-codes mfa_recovery_codes alice alice-1 cli",
		"user_change c-mfa-reset mfa_reset alice alice-1 cli",
	}
	if !slices.Equal(got, want) {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("change records:\n%s\nwant:\n%s\nlog:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), log)
	}
	check, err := VerifyAudit(context.Background(), st, []string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	if !check.OK() {
		t.Fatalf("verify: %v", check.Problems)
	}
}

// failingSink fails every write.
type failingSink struct{}

func (failingSink) WriteRecord(*audit.Record) error { return errors.New("disk full") }

// TestAuditChangesKeptWhenUnwritten: a change whose records the log did
// not take stays in the store, for a later drain, also when the writer
// queues records (a flush delay) and Append succeeds before the write. It
// failed when the drain deleted the changes Append had queued.
func TestAuditChangesKeptWhenUnwritten(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := store.WithAuditChange(t.Context(), &store.AuditChange{ID: "c1", Time: time.Now(), Action: "add"})
	if err := st.CreateUser(ctx, store.User{Username: "alice", Subject: "alice-1", PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	key, err := audit.NewKeySigner("audit-test", ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Sink: failingSink{}, Signer: key, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d := &changeDrainer{st: st, claimant: "gw/run", now: time.Now}
	d.drain(t.Context(), w, zap.NewNop())
	if pending, err := st.PendingAuditChanges(t.Context()); err != nil || !pending {
		t.Fatalf("after a drain whose writes failed: pending %v, %v; want the change kept", pending, err)
	}
}
