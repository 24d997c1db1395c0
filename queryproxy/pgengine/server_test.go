package pgengine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// postgresEnv names the environment variable holding the URL of a PostgreSQL server for
// these tests, as scripts/test-postgres.sh prints it:
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. The user must be able to
// create databases. Each test works in a database of its own, dropped at its end.
const postgresEnv = "GATEHOUSE_TEST_POSTGRES"

// serverURL is the configured server's URL, or skips the test with the reason.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(postgresEnv)
	if u == "" {
		t.Skipf("set %s to a PostgreSQL URL to run the tests against a real server (./test.sh starts one)", postgresEnv)
	}
	return u
}

// admin is a connection to the server's own database (the one the URL names), for
// creating and dropping test databases and for watching pg_stat_activity; closed at the
// end of the test.
func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// icu caches whether the server can create a database whose default collation is ICU's
// linguistic "en-US" (PostgreSQL 15 and later, built with ICU).
var icu struct {
	once sync.Once
	ok   bool
}

// newDatabase creates a database with a random name, runs script in it (in one
// transaction), and drops it at the end of the test. It returns the database's URL and
// name. The database's default collation is linguistic (ICU "en-US", which orders "bhp"
// next to "BHP" and ignores punctuation at first) when the server has ICU, so that a test
// of byte-wise ordering proves that the engine asks for it; else the server's default.
func newDatabase(t testing.TB, script string) (dsn, name string) {
	t.Helper()
	base := serverURL(t)
	a := admin(t)
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	name = "pgengine_test_" + hex.EncodeToString(b[:])
	icu.once.Do(func() {
		_, err := a.Exec(ctx, `CREATE DATABASE pgengine_icu_probe_`+hex.EncodeToString(b[:])+
			` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`)
		if err == nil {
			a.Exec(ctx, `DROP DATABASE pgengine_icu_probe_`+hex.EncodeToString(b[:]))
		}
		icu.ok = err == nil
	})
	create := `CREATE DATABASE ` + name
	if icu.ok {
		create += ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`
	} else {
		t.Log(`the server cannot create an ICU "en-US" database: the test database has the server's default collation`)
	}
	if _, err := a.Exec(ctx, create); err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	t.Cleanup(func() {
		if _, err := a.Exec(context.Background(), `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn = u.String()
	if script != "" {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		// No arguments: pgx sends the script as one simple query, one implicit transaction.
		if _, err := c.Exec(ctx, script); err != nil {
			t.Fatalf("running the script: %v", err)
		}
	}
	return dsn, name
}

// openTest opens an engine on a new database holding script (testSchema if empty), with
// cfg's other settings; closed at the end of the test. It returns the database's name too.
func openTest(t testing.TB, cfg Config, script string) (*Engine, string) {
	t.Helper()
	if script == "" {
		script = testSchema
	}
	dsn, name := newDatabase(t, script)
	cfg.DSN = dsn
	return openEngine(t, cfg), name
}

// openEngine opens an engine with cfg; closed at the end of the test.
func openEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// exec runs SQL on the database as its owner, outside the engine.
func exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryAll runs a query through the engine and returns its columns and rows (copied).
func queryAll(t testing.TB, e *Engine, sql string, args ...any) ([]sqlgen.Column, [][]any, error) {
	t.Helper()
	return queryCtx(context.Background(), e, sql, args...)
}

func queryCtx(ctx context.Context, e *Engine, sql string, args ...any) ([]sqlgen.Column, [][]any, error) {
	rows, err := e.Query(ctx, sqlgen.Statement{SQL: sql, Args: args})
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var all [][]any
	for rows.Next() {
		all = append(all, append([]any(nil), rows.Values()...))
	}
	return rows.Columns(), all, rows.Err()
}

// count is the number of rows of table.
func count(t testing.TB, e *Engine, table string) int64 {
	t.Helper()
	_, rows, err := queryAll(t, e, `SELECT count(*) FROM "`+table+`"`)
	if err != nil {
		t.Fatal(err)
	}
	return rows[0][0].(int64)
}

// backends counts the client connections to database name, and those of them running a
// statement that contains text (none if text is empty), as pg_stat_activity shows them.
func backends(t testing.TB, a *pgx.Conn, name, text string) (conns, running int) {
	t.Helper()
	conns, running, err := countBackends(a, name, text)
	if err != nil {
		t.Fatal(err)
	}
	return conns, running
}

// countBackends is backends for any goroutine: it returns its error.
func countBackends(a *pgx.Conn, name, text string) (conns, running int, err error) {
	err = a.QueryRow(context.Background(), `SELECT count(*),
			count(*) FILTER (WHERE $2 <> '' AND state = 'active' AND strpos(query, $2) > 0)
		FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`, name, text).Scan(&conns, &running)
	return conns, running, err
}
