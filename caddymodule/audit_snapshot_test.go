package caddymodule

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// lockedBuffer is a bytes.Buffer a writer and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// TestEntitlementSnapshot: a snapshot records one entitlement_snapshot
// per user of the store (a user without pairs too) and per client holding
// pairs, with the pairs in their text form; the run's loop records the
// next one at UTC midnight. It failed when users without pairs were left
// out (a usage report then could not tell them from unknown users).
func TestEntitlementSnapshot(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, u := range []store.User{
		{Username: "trader", Subject: "s-trader", PasswordHash: "x", Entitlements: entitle.MustParse("ASX:quotes NZX:quotes")},
		{Username: "viewer", Subject: "s-viewer", PasswordHash: "x"},
	} {
		if err := st.CreateUser(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := audit.NewKeySigner("audit-test", key)
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	w, err := audit.NewWriter(audit.Options{Instance: "gw", Sink: audit.LineSink{W: &buf}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	// One millisecond before midnight: the loop's first snapshot comes at
	// once, after the one the test takes.
	midnight := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var calls atomic.Int32 // the loop asks the time before each wait: first just before midnight, then after it
	s := &snapshotter{st: st, now: func() time.Time {
		if calls.Add(1) == 1 {
			return midnight.Add(-time.Millisecond)
		}
		return midnight.Add(time.Hour)
	}}
	app := &App{Clients: []Client{{ID: "feed-service", Entitlements: []string{"ASX:quotes"}}, {ID: "demo-app"}}}
	pairs := app.clientPairs()
	s.clients.Store(&pairs)
	s.snapshot(t.Context(), w, zap.NewNop())

	want := map[string]string{"user s-trader": "ASX:quotes NZX:quotes", "user s-viewer": "", "client feed-service": "ASX:quotes"}
	check := func(lines []string) {
		t.Helper()
		got := map[string]string{}
		for _, l := range lines {
			r, err := audit.ParseLine([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != audit.KindEntitlementSnapshot {
				continue
			}
			principal, sub, ent := snapshotAttrs(r)
			got[principal+" "+sub] = ent
		}
		if len(got) != len(want) {
			t.Fatalf("snapshot %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("snapshot %v, want %v", got, want)
			}
		}
	}
	check(buf.lines())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx, w, zap.NewNop()) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(buf.lines()) < 2*len(want)+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	lines := buf.lines()
	if len(lines) != 2*len(want)+1 { // run_start, then two snapshots
		t.Fatalf("%d records after midnight, want %d:\n%s", len(lines), 2*len(want)+1, strings.Join(lines, "\n"))
	}
	check(lines[1+len(want):])
}

// snapshotAttrs reads a snapshot record's principal, subject and pairs.
func snapshotAttrs(r *audit.Record) (principal, sub, ent string) {
	if v, ok := r.Attr(attrPrincipal); ok {
		principal, _ = v.Str()
	}
	if v, ok := r.Attr(audit.AttrSubject); ok {
		sub, _ = v.Str()
	}
	if v, ok := r.Attr(audit.AttrEntitlements); ok {
		list, _ := v.List()
		ent = strings.Join(list, " ")
	}
	return principal, sub, ent
}
