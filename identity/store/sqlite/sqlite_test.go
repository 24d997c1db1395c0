package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// open opens the store at path for the test t and closes it when t ends.
func open(t *testing.T, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(storetest.Context(t), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// The conformance suite runs its cases of legacy families only on a
// store.LegacySeeder: this keeps them from being skipped unnoticed.
var _ store.LegacySeeder = (*sqlite.Store)(nil)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	})
}

func TestBrowserConformance(t *testing.T) {
	storetest.RunBrowser(t, func(t *testing.T) store.BrowserStore {
		return open(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	})
}

func TestDeviceConformance(t *testing.T) {
	storetest.RunDevice(t, func(t *testing.T) store.DeviceStore {
		return open(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	})
}

// TestTwoStoresDevice: two Stores on one file exchanging and deciding one
// device authorization at once: exactly one of each wins.
func TestTwoStoresDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	a, b := open(t, path), open(t, path)
	storetest.ConsumeDeviceConcurrently(t, 16, a, b)
	storetest.DecideDeviceConcurrently(t, 16, a, b)
}

// TestTwoStoresConsumeCode: two Stores on one file using one code at once:
// exactly one use wins.
func TestTwoStoresConsumeCode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	storetest.ConsumeConcurrently(t, 16, open(t, path), open(t, path))
}

// TestTwoStoresRotate: two Stores on one file, as two processes would have,
// rotating the same token at once: still exactly one winner, no lock errors.
func TestTwoStoresRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	storetest.RotateConcurrently(t, open(t, path), open(t, path))
}

// TestTwoStoresAdmit: two Stores on one file counting attempts against
// one key at once lose no increment and meet no lock errors.
func TestTwoStoresAdmit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	storetest.AdmitConcurrently(t, open(t, path), open(t, path))
}

// TestTwoStoresWrite: two Stores on one file writing at once wait for each
// other's locks instead of failing.
func TestTwoStoresWrite(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	stores := []*sqlite.Store{open(t, path), open(t, path)}
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			u := store.User{Username: fmt.Sprintf("user%02d", i), Subject: fmt.Sprintf("sub%02d", i), PasswordHash: "x"}
			errs[i] = stores[i%2].CreateUser(ctx, u)
		})
	}
	wait(ctx, t, &wg)
	for i, err := range errs {
		if err != nil {
			t.Errorf("CreateUser %d: %v", i, err)
		}
	}
	for i, s := range stores {
		us, err := s.Users(ctx)
		if err != nil || len(us) != n {
			t.Errorf("store %d: Users: %d users, %v; want %d", i, len(us), err, n)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	secret, err := s.Secret(ctx, "refresh", func() ([]byte, error) { return []byte("kept"), nil })
	if err != nil {
		t.Fatalf("Secret: %v", err)
	}
	u := store.User{Username: "demo", Subject: "sub-demo", PasswordHash: "x", Scopes: []string{"openid"}}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path)
	got, err := s.Secret(ctx, "refresh", func() ([]byte, error) { return []byte("new"), nil })
	if err != nil || !bytes.Equal(got, secret) {
		t.Errorf("Secret after reopening: %q, %v; want %q", got, err, secret)
	}
	gotU, err := s.User(ctx, "demo")
	if err != nil || gotU.Subject != u.Subject || len(gotU.Scopes) != 1 {
		t.Errorf("User after reopening: %+v, %v", gotU, err)
	}
}

// TestFile: the directory and the file are created private, the path may
// hold characters a URI would read otherwise, and the file is in WAL mode.
func TestFile(t *testing.T) {
	ctx := storetest.Context(t)
	dir := filepath.Join(t.TempDir(), "state", "gate house")
	path := filepath.Join(dir, "a?b#c%20.db")
	open(t, path)

	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != want {
				t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
			}
		}
	}
	var mode string
	if err := rawDB(t, path).QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode %q, want wal", mode)
	}
}

func TestOptions(t *testing.T) {
	ctx := storetest.Context(t)
	for _, tt := range []struct {
		name string
		path string
		opts []sqlite.Option
		ok   bool
	}{
		{"Defaults", "a.db", nil, true},
		{"Set", "b.db", []sqlite.Option{sqlite.WithBusyTimeout(time.Second), sqlite.WithReadConns(1)}, true},
		{"NoPath", "", nil, false},
		{"ZeroBusyTimeout", "c.db", []sqlite.Option{sqlite.WithBusyTimeout(0)}, false},
		{"NoReaders", "d.db", []sqlite.Option{sqlite.WithReadConns(0)}, false},
		{"SynchronousNormal", "e.db", []sqlite.Option{sqlite.WithSynchronous("normal")}, true},
		{"SynchronousFull", "f.db", []sqlite.Option{sqlite.WithSynchronous("full")}, true},
		{"SynchronousOff", "g.db", []sqlite.Option{sqlite.WithSynchronous("off")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path != "" {
				path = filepath.Join(t.TempDir(), path)
			}
			s, err := sqlite.Open(ctx, path, tt.opts...)
			if err == nil {
				s.Close()
			}
			if (err == nil) != tt.ok {
				t.Errorf("Open: %v, want success %v", err, tt.ok)
			}
		})
	}
}

// TestWritesFailAlone: many writes at once, which the Store commits
// together: those that fail fail alone, each with its own error, and the
// others are kept.
func TestWritesFailAlone(t *testing.T) {
	ctx := storetest.Context(t)
	s := open(t, filepath.Join(t.TempDir(), "gatehouse.db"))
	now := time.Now()
	family := func(id string, i int) store.RefreshFamily {
		return store.RefreshFamily{ID: id, ClientID: "app", Subject: "sub", ExpiresAt: now.Add(time.Hour),
			Generation: 1, Current: []byte(fmt.Sprintf("token-%d", i)), CurrentExpiresAt: now.Add(time.Hour)}
	}
	if err := s.CreateRefreshFamily(ctx, family("taken", -1), store.FamilyBound{}); err != nil {
		t.Fatalf("CreateRefreshFamily: %v", err)
	}
	// Odd writes take a family ID of their own, even ones the taken one.
	const n = 64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		id := "taken"
		if i%2 == 1 {
			id = fmt.Sprintf("fam-%d", i)
		}
		wg.Go(func() { errs[i] = s.CreateRefreshFamily(ctx, family(id, i), store.FamilyBound{}) })
	}
	wait(ctx, t, &wg)
	for i, err := range errs {
		if i%2 == 0 {
			if !errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("write %d (taken family): %v, want %v", i, err, store.ErrAlreadyExists)
			}
			continue
		}
		f, readErr := s.RefreshFamily(ctx, fmt.Sprintf("fam-%d", i))
		if err != nil || readErr != nil || !bytes.Equal(f.Current, []byte(fmt.Sprintf("token-%d", i))) {
			t.Errorf("write %d (new family): %v; reading it: %+v, %v", i, err, f, readErr)
		}
	}
	if f, err := s.RefreshFamily(ctx, "taken"); err != nil || !bytes.Equal(f.Current, []byte("token--1")) {
		t.Errorf("the taken family after the refused writes: %+v, %v; want it unchanged", f, err)
	}
}

// TestWriteAbandoned: a write whose context ends while it waits for the
// write lock returns the context's error and never happens.
func TestWriteAbandoned(t *testing.T) {
	ctx := storetest.Context(t)
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s := open(t, path)
	// Another process holds the write lock.
	conn, err := rawDB(t, path).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	now := time.Now()
	if _, _, err := s.Admit(short, "abandoned", now, time.Hour, 5, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Admit while another process writes: %v, want %v", err, context.DeadlineExceeded)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	// Writes run in order: once a later one is done, the abandoned one
	// would have run.
	if _, _, err := s.Admit(ctx, "later", now, time.Hour, 5, time.Hour); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if c, err := s.Counter(ctx, "abandoned"); err != nil || c.Count != 0 {
		t.Errorf("Counter of the abandoned write: %+v, %v; want a count of 0", c, err)
	}
}

// TestWriteAfterClose: a write to a closed Store fails.
func TestWriteAfterClose(t *testing.T) {
	ctx := storetest.Context(t)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := s.Admit(ctx, "k", time.Now(), time.Hour, 5, time.Hour); err == nil {
		t.Error("Admit after Close succeeded")
	}
}

// rawDB opens the file at path with the bare driver, for looking inside.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: "_busy_timeout=10000"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wait waits for wg, failing t if ctx ends first.
func wait(ctx context.Context, t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("goroutines still running: %v", ctx.Err())
	}
}
