package sqlgen

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// postgresEnv names the environment variable holding a PostgreSQL URL for these tests, for
// example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. The tests work in a
// schema of their own, which they drop at the end.
const postgresEnv = "GATEHOUSE_TEST_POSTGRES"

// openPostgres opens the configured server on one connection whose search_path is a fresh
// schema, or skips the test with the reason.
func openPostgres(t *testing.T) (*sql.DB, string) {
	t.Helper()
	url := os.Getenv(postgresEnv)
	if url == "" {
		t.Skipf("set %s to a PostgreSQL URL to run the PostgreSQL semantic tests", postgresEnv)
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	var b [6]byte
	rand.Read(b[:])
	schema := "sqlgen_test_" + hex.EncodeToString(b[:])
	for _, q := range []string{"CREATE SCHEMA " + schema, "SET search_path TO " + schema} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		db.Exec("DROP SCHEMA " + schema + " CASCADE")
		db.Close()
	})
	return db, schema
}

func TestPostgresSemantics(t *testing.T) {
	db, _ := openPostgres(t)
	// A linguistic collation orders "bhp" before "Z" and "[x]" before "A": the tests then
	// prove that COLLATE "C" is what makes ordering byte-wise, not the server's default.
	text := "TEXT"
	var icu bool
	if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'en-x-icu')`).Scan(&icu); err != nil {
		t.Fatal(err)
	}
	if icu {
		text = `TEXT COLLATE "en-x-icu"`
	} else {
		t.Log(`no "en-x-icu" collation: text columns use the database default`)
	}
	runSemantics(t, &testDB{
		db: db,
		d:  PostgreSQL,
		sqlType: map[Type]string{String: text, Integer: "BIGINT", Decimal: "NUMERIC",
			DateTime: "TIMESTAMP", Boolean: "BOOLEAN", Binary: "BYTEA"},
	})
}
