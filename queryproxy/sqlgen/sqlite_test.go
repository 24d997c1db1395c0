package sqlgen

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

// openSQLite opens a private in-memory SQLite database (one connection, so every query
// sees the same memory).
func openSQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLiteSemantics(t *testing.T) {
	runSemantics(t, &testDB{
		db: openSQLite(t),
		d:  SQLite,
		sqlType: map[Type]string{String: "TEXT", Integer: "INTEGER", Decimal: "REAL",
			DateTime: "TEXT", Boolean: "INTEGER", Binary: "BLOB"},
		nocase: map[string]bool{"Security.Name": true, "Order.Owner": true},
	})
}
