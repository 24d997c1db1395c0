package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

func TestZZPragmas(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"synchronous", "wal_autocheckpoint", "cache_size", "mmap_size", "temp_store", "page_size", "journal_mode", "journal_size_limit"} {
		var w, r string
		s.w.QueryRow("PRAGMA " + p).Scan(&w)
		s.r.QueryRow("PRAGMA " + p).Scan(&r)
		t.Logf("%s: writer %s reader %s", p, w, r)
	}
	var v string
	s.r.QueryRow("select sqlite_version()").Scan(&v)
	t.Log(v)
}
