package sqliteengine

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	_ "modernc.org/sqlite"
)

// TestStmtCacheBounded: statements past the bound still run (prepared
// for the one use and closed), and the cache never holds more than the
// bound; the same text gets the same prepared statement.
func TestStmtCacheBounded(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c stmtCache
	defer c.close()
	ctx := context.Background()
	for i := range maxCachedStatements + 20 {
		q := "SELECT " + strconv.Itoa(i)
		st, err := c.get(ctx, db, q)
		if err != nil && err != errNotCached {
			t.Fatal(err)
		}
		var n int
		if err := st.QueryRowContext(ctx).Scan(&n); err != nil || n != i {
			t.Fatalf("%s: %d %v", q, n, err)
		}
		if err == errNotCached {
			st.Close()
		}
	}
	if len(c.stmts) != maxCachedStatements {
		t.Fatalf("%d cached", len(c.stmts))
	}
	a, _ := c.get(ctx, db, "SELECT 1")
	b, _ := c.get(ctx, db, "SELECT 1")
	if a != b {
		t.Fatal("the same text prepared twice")
	}
}
