package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStatus: the schema version of a store, read without creating or changing a file:
// absent with no file, current while a server holds the store open (its WAL read
// too) and after it closed it.
// It failed when: a read-only connection created -wal and -shm files beside a closed
// store, and, made immutable, read no schema while a server had the store open.
func TestStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	if absent, _, _, err := Status(ctx, path); err != nil || !absent {
		t.Fatalf("no file: absent %v, %v", absent, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Status created the file")
	}
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	absent, current, latest, err := Status(ctx, path)
	if err != nil || absent || current != latest {
		t.Errorf("open store: absent %v, version %d of %d, %v", absent, current, latest, err)
	}
	st.Close()
	files := func() int { m, _ := filepath.Glob(path + "*"); return len(m) }
	before := files()
	absent, current, latest, err = Status(ctx, path)
	if err != nil || absent || current != latest {
		t.Errorf("closed store: absent %v, version %d of %d, %v", absent, current, latest, err)
	}
	if after := files(); after != before {
		t.Errorf("Status of a closed store left %d files beside it, there were %d", after, before)
	}
}
