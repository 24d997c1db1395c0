package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse/gatehouse/internal/sqlitefile"
)

// TestQueryCannotWrite sends writes of SQLite's own through Query (those of every engine
// are the conformance suite's ReadOnly case): each fails, and nothing changes.
func TestQueryCannotWrite(t *testing.T) {
	e := openTest(t, Config{})
	attached := e.path + ".other"
	for name, stmt := range map[string]string{
		"attach":                  `ATTACH '` + attached + `' AS other`,
		"query_only off":          `PRAGMA query_only = 0`,
		"query_only off, insert":  `PRAGMA query_only = 0; INSERT INTO Item (Name, Qty) VALUES ('crafted', 1)`,
		"set schema version":      `PRAGMA schema_version = 1000`,
		"savepoint":               `SAVEPOINT s`,
		"vacuum into":             `VACUUM INTO '` + attached + `'`,
		"replace into":            `REPLACE INTO Item (Id, Name, Qty) VALUES (1, 'crafted', 1)`,
		"insert or ignore select": `INSERT OR IGNORE INTO Item (Name, Qty) SELECT Code, 1 FROM Security`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := queryAll(t, e, stmt)
			if err == nil {
				t.Fatalf("%s succeeded through Query", stmt)
			}
			if n := count(t, e, "Item"); n != 1 {
				t.Fatalf("Item has %d rows after %s, want 1", n, stmt)
			}
			if n := count(t, e, "Security"); n != 3 {
				t.Fatalf("Security has %d rows after %s, want 3", n, stmt)
			}
		})
	}
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 2 {
		t.Fatalf("tables %v, want Item and Security only", cat.Tables)
	}
	if _, err := os.Stat(attached); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a statement sent through Query created %s: %v", attached, err)
	}
}

// TestReaderFileReadOnly checks the first guard alone: a reader connection, without the
// authorizer, with query_only turned off, still cannot write.
func TestReaderFileReadOnly(t *testing.T) {
	e := openTest(t, Config{})
	db, err := sql.Open("sqlite", readerDSN(e.path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO Item (Name, Qty) VALUES ('crafted', 1)`)
	if code := sqliteCode(err) & 0xff; code != sqlite3.SQLITE_READONLY {
		t.Fatalf("insert on a reader connection: %v (code %d), want SQLITE_READONLY", err, code)
	}
}

// TestReaderQueryOnly checks the second guard alone: query_only on a connection that
// could write.
func TestReaderQueryOnly(t *testing.T) {
	e := openTest(t, Config{})
	db, err := sql.Open("sqlite", sqlitefile.URI(e.path, url.Values{"_query_only": {"1"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`INSERT INTO Item (Name, Qty) VALUES ('crafted', 1)`)
	if code := sqliteCode(err) & 0xff; code != sqlite3.SQLITE_READONLY {
		t.Fatalf("insert with query_only: %v (code %d), want SQLITE_READONLY", err, code)
	}
	if got := readerDSN(e.path, DefaultBusyTimeout); !strings.Contains(got, "mode=ro") || !strings.Contains(got, "_query_only=1") {
		t.Fatalf("reader DSN %q lacks mode=ro or _query_only=1", got)
	}
}

// TestReaderAuthorizer checks the third guard alone: the authorizer on a connection that
// could write.
func TestReaderAuthorizer(t *testing.T) {
	e := openTest(t, Config{})
	c, err := sqlite.NewConnector(writerDSN(e.path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(readOnlyConnector{c})
	defer db.Close()
	_, err = db.Exec(`INSERT INTO Item (Name, Qty) VALUES ('crafted', 1)`)
	if code := sqliteCode(err) & 0xff; code != sqlite3.SQLITE_AUTH {
		t.Fatalf("insert under the authorizer: %v (code %d), want SQLITE_AUTH", err, code)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM Item`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("select under the authorizer: %d, %v", n, err)
	}
}

func TestReadOnlyAuthorizer(t *testing.T) {
	tests := []struct {
		action     sqlite.AuthorizerActionCode
		arg1, arg2 string
		want       sqlite.AuthorizerReturnCode
	}{
		{sqlite.AuthSelect, "", "", sqlite.AuthorizerOK},
		{sqlite.AuthRead, "Security", "Code", sqlite.AuthorizerOK},
		{sqlite.AuthFunction, "", "count", sqlite.AuthorizerOK},
		{sqlite.AuthRecursive, "", "", sqlite.AuthorizerOK},
		{sqlite.AuthTransaction, "BEGIN", "", sqlite.AuthorizerOK},
		{sqlite.AuthPragma, "schema_version", "", sqlite.AuthorizerOK},
		{sqlite.AuthPragma, "SCHEMA_VERSION", "", sqlite.AuthorizerOK},
		{sqlite.AuthPragma, "table_xinfo", "Security", sqlite.AuthorizerOK},
		{sqlite.AuthPragma, "schema_version", "5", sqlite.AuthorizerDeny},
		{sqlite.AuthPragma, "query_only", "0", sqlite.AuthorizerDeny},
		{sqlite.AuthPragma, "query_only", "", sqlite.AuthorizerDeny},
		{sqlite.AuthPragma, "writable_schema", "1", sqlite.AuthorizerDeny},
		{sqlite.AuthInsert, "Item", "", sqlite.AuthorizerDeny},
		{sqlite.AuthUpdate, "Item", "Name", sqlite.AuthorizerDeny},
		{sqlite.AuthDelete, "Item", "", sqlite.AuthorizerDeny},
		{sqlite.AuthCreateTable, "X", "", sqlite.AuthorizerDeny},
		{sqlite.AuthCreateTempTable, "X", "", sqlite.AuthorizerDeny},
		{sqlite.AuthDropTable, "Item", "", sqlite.AuthorizerDeny},
		{sqlite.AuthAlterTable, "main", "Item", sqlite.AuthorizerDeny},
		{sqlite.AuthAttach, "/etc/passwd", "", sqlite.AuthorizerDeny},
		{sqlite.AuthDetach, "x", "", sqlite.AuthorizerDeny},
		{sqlite.AuthSavepoint, "BEGIN", "s", sqlite.AuthorizerDeny},
		{sqlite.AuthCreateVTable, "x", "fts5", sqlite.AuthorizerDeny},
		{sqlite.AuthAnalyze, "Item", "", sqlite.AuthorizerDeny},
		{sqlite.AuthReindex, "", "", sqlite.AuthorizerDeny},
	}
	for _, tt := range tests {
		if got := readOnlyAuthorizer(tt.action, tt.arg1, tt.arg2, "main", ""); got != tt.want {
			t.Errorf("readOnlyAuthorizer(%d, %q, %q) = %d, want %d", tt.action, tt.arg1, tt.arg2, got, tt.want)
		}
	}
}
