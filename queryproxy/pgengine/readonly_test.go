package pgengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestQueryCannotWrite sends writes of PostgreSQL's own through Query (those of every
// engine are the conformance suite's ReadOnly case): each fails, and nothing changes.
func TestQueryCannotWrite(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	for name, stmt := range map[string]string{
		"truncate":           `TRUNCATE "Item" CASCADE`,
		"nextval":            `SELECT nextval('counter')`,
		"select for update":  `SELECT "Code" FROM "Security" FOR UPDATE`,
		"set read write":     `SET TRANSACTION READ WRITE`,
		"commit then insert": `COMMIT; INSERT INTO "Item" ("Name", "Qty") VALUES ('crafted', 1)`,
		"commit":             `COMMIT`,
		"rollback":           `ROLLBACK`,
		"copy from":          `COPY "Item" ("Name", "Qty") FROM STDIN`,
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
	// COMMIT AND CHAIN commits the read-only transaction, which wrote nothing, and opens
	// another read-only one, which the engine rolls back: it succeeds, and changes nothing.
	if _, _, err := queryAll(t, e, `COMMIT AND CHAIN`); err != nil {
		t.Logf("COMMIT AND CHAIN: %v", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows after COMMIT AND CHAIN", n)
	}
	_, rows, err := queryAll(t, e, `SELECT last_value, is_called FROM counter`)
	if err != nil || rows[0][1] != false {
		t.Fatalf("the sequence moved: %v, %v", rows, err)
	}
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 3 {
		t.Fatalf("tables %v, want Cheap, Item and Security", cat.Tables)
	}
}

// TestReadTransaction: a statement of Query runs in a read-only transaction, with the
// engine's statement time limit and search path set for it; and a setting a statement
// changes does not outlive the statement's transaction.
func TestReadTransaction(t *testing.T) {
	e, _ := openTest(t, Config{StatementTimeout: 1500 * time.Millisecond, MaxConns: 1}, "")
	_, rows, err := queryAll(t, e, `SELECT current_setting('transaction_read_only'), current_setting('statement_timeout'),
		current_setting('search_path')`)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][0] != "on" || rows[0][1] != "1500ms" || rows[0][2] != `pg_catalog, "public", pg_temp` {
		t.Fatalf("transaction_read_only, statement_timeout, search_path: %v", rows[0])
	}
	// A statement that changes the settings for the session: there is one connection, so
	// the next statement runs on it, in a new transaction, with the engine's settings.
	if _, _, err := queryAll(t, e, `SELECT set_config('statement_timeout', '0', false), set_config('search_path', 'pg_temp', false)`); err != nil {
		t.Fatal(err)
	}
	_, rows, err = queryAll(t, e, `SELECT current_setting('statement_timeout'), current_setting('search_path'), pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][0] != "1500ms" || rows[0][1] != `pg_catalog, "public", pg_temp` {
		t.Fatalf("after a statement changed them: %v", rows[0])
	}
	// And outside the engine's transaction, on the same connection (there is one), the
	// session has its own defaults: the engine's settings were for its transactions only,
	// so a connection goes back to the pool clean.
	var timeout, readOnly string
	var pid int64
	err = e.pool.QueryRow(context.Background(), `SELECT current_setting('statement_timeout'), current_setting('transaction_read_only'),
		pg_backend_pid()`).Scan(&timeout, &readOnly, &pid)
	if err != nil {
		t.Fatal(err)
	}
	if timeout != "0" || readOnly != "off" || pid != rows[0][2] {
		t.Fatalf("session statement_timeout %q, transaction_read_only %q, backend %d (engine's %v)", timeout, readOnly, pid, rows[0][2])
	}
}

// TestExecReadWrite: Exec's transaction may write even where the session's default is
// read-only (a role or database set default_transaction_read_only).
func TestExecReadWrite(t *testing.T) {
	dsn, name := newDatabase(t, testSchema)
	exec(t, dsn, `ALTER DATABASE `+name+` SET default_transaction_read_only = on`)
	e := openEngine(t, Config{DSN: dsn})
	n, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ($1, 2)`, Args: []any{"two"}}})
	if err != nil || n != 1 {
		t.Fatalf("Exec = %d, %v", n, err)
	}
	// And a write through Query fails with PostgreSQL's read_only_sql_transaction.
	_, _, err = queryAll(t, e, `INSERT INTO "Item" ("Name", "Qty") VALUES ('three', 3)`)
	if pg, ok := errors.AsType[*pgconn.PgError](err); !ok || pg.Code != "25006" {
		t.Fatalf("insert through Query: %v, want SQLSTATE 25006", err)
	}
}
