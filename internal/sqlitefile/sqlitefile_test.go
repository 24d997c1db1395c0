package sqlitefile

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "db.sqlite")
	if err := Create(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v, %v, want mode 0600", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v, %v, want mode 0700", fi, err)
	}
	// An existing file keeps its mode.
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Create(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v after a second Create, want 0640", fi.Mode().Perm())
	}
}

func TestDSN(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{WriterDSN("/var/lib/g/db", 5*time.Second, "FULL"),
			"file:///var/lib/g/db?_busy_timeout=5000&_foreign_keys=1&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate"},
		{WriterDSN("/tmp/a?b#c", 1500*time.Microsecond, "NORMAL"),
			"file:///tmp/a%3Fb%23c?_busy_timeout=1&_foreign_keys=1&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"},
		{URI("/db", url.Values{"mode": {"ro"}}), "file:///db?mode=ro"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s\nwant %s", tt.got, tt.want)
		}
	}
}
