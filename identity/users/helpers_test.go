package users

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

var (
	hashOnce  sync.Once
	demoHash  string
	otherHash string
)

// passwordHashes are the hashes of "demo-pw" and "other-pw", made once.
func passwordHashes(t testing.TB) (string, string) {
	hashOnce.Do(func() {
		var err error
		if demoHash, err = HashPassword("demo-pw"); err != nil {
			t.Fatal(err)
		}
		if otherHash, err = HashPassword("other-pw"); err != nil {
			t.Fatal(err)
		}
	})
	return demoHash, otherHash
}

// t0 is the tests' clock.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// openStore is a real SQLite store in a temporary directory holding the
// user "demo" (password "demo-pw").
func openStore(t testing.TB) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dh, _ := passwordHashes(t)
	if _, err := Seed(ctx, st, []store.User{{Username: "demo", Subject: "sub-demo", PasswordHash: dh}}, t0); err != nil {
		t.Fatal(err)
	}
	return st
}
