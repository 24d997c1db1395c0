package enginetest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Schema is the suite's own tables, which every database it runs on holds after the
// demo's: Item, with a constraint of every kind (primary key, unique, not null, check,
// foreign key) and a boolean, holding one row; Doubled, with a generated column; Quote, a
// market-data table whose rows name their venue (Venues). It is written so that SQLite
// and PostgreSQL both read it, for one transaction.
const Schema = `
CREATE TABLE "Item" (
	"Id" integer PRIMARY KEY,
	"Name" text NOT NULL UNIQUE,
	"Qty" integer CHECK ("Qty" > 0),
	"Parent" integer REFERENCES "Item" ("Id"),
	"Active" boolean
);
INSERT INTO "Item" ("Id", "Name", "Qty", "Active") VALUES (1, 'one', 1, TRUE);
CREATE TABLE "Doubled" (
	"Price" numeric,
	"Total" numeric GENERATED ALWAYS AS ("Price" * 2) STORED
);
CREATE TABLE "Quote" (
	"Id" integer PRIMARY KEY,
	"Code" text NOT NULL,
	"Venue" text,
	"Price" numeric
);
INSERT INTO "Quote" ("Id", "Code", "Venue", "Price") VALUES
	(1, 'BHP', 'ASX', 1), (2, 'CBA', 'ASX', 2), (3, 'AIR', 'NZX', 3), (4, 'SPK', 'NZX', 4),
	(5, 'RIO', 'LSE', 5), (6, 'NUL', NULL, 6), (7, 'LOW', 'asx', 7), (8, 'SPC', 'ASX ', 8),
	(9, 'UNI', 'ＡSX', 9), (10, 'TAB', 'ASX	', 10);
`

// Options are the settings a case opens its engine with. A zero field is the engine's
// default.
type Options struct {
	// StatementTimeout is the engine's statement time limit.
	StatementTimeout time.Duration
	// CatalogCheckInterval is how long the engine serves its cached catalog unchecked.
	CatalogCheckInterval time.Duration
	// Now is the clock of the engine's catalog cache.
	Now func() time.Time
	// Trace is called with each statement Query and Exec run, and its arguments, before
	// it runs, and with none of the engine's own.
	Trace func(sql string, args []any)
}

// Open returns a new engine for the test t with o's settings, over a new database
// holding the demo's tables and rows (examples/querydb: querydb.SQL on SQLite,
// querydb.PostgresSQL on PostgreSQL) and then Schema's, and closes it when t ends
// (closing it again must be harmless).
type Open func(t *testing.T, o Options) engine.Engine

// Run runs the suite on the engines open returns. Each case opens one of its own.
func Run(t *testing.T, open Open) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, open) })
			}
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, open Open)
}

var groups = []struct {
	name  string
	cases []testCase
}{
	{"Operators", []testCase{{"Sqlgen", testOperators}}},
	{"Catalog", []testCase{{"Tables", testCatalog}, {"Cache", testCatalogCache}}},
	{"Values", []testCase{{"Bind", testBind}}},
	{"Writes", []testCase{{"Constraint", testConstraint}, {"Atomic", testAtomic}, {"Concurrent", testConcurrent}}},
	{"Limits", []testCase{{"Query", testQueryTimeLimit}, {"BetweenRows", testTimeLimitBetweenRows},
		{"Canceled", testCanceled}, {"Exec", testExecTimeLimit}}},
	{"ReadOnly", []testCase{{"QueryCannotWrite", testQueryCannotWrite}}},
	{"Engine", []testCase{{"Closed", testClosed}, {"Trace", testTrace}}},
	{"Venues", []testCase{{"Select", testVenueSelect}, {"Writes", testVenueWrites}, {"Burst", testVenueBurst}}},
}

// slack is how late a case may see a time limit act on a loaded machine, where a
// goroutine waiting for a timer can wait for a CPU for hundreds of milliseconds.
const slack = 3 * time.Second

// Statement is the IQL statement src as the handler would have e run it (sqlgen, with the
// engine's row check), without a policy.
func Statement(t testing.TB, e engine.Engine, src string) sqlgen.Statement {
	t.Helper()
	stmt, cat := parse(t, src, e.Catalog)
	var opts sqlgen.Options
	if rc, ok := e.(engine.RowChecker); ok {
		opts.RowCheck = rc.RowCheck()
	}
	st, err := sqlgen.Generate(e.Dialect(), cat, stmt, opts)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return st
}

// parse parses the IQL statement src and reads the catalog its names resolve against.
func parse(t testing.TB, src string, catalog func(context.Context) (sqlgen.Catalog, error)) (iql.Statement, sqlgen.Catalog) {
	t.Helper()
	stmt, err := iql.Parse(src, iql.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	cat, err := catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stmt, cat
}

// Arg is the placeholder of the n-th bind argument (from 1) in d.
func Arg(d sqlgen.Dialect, n int) string {
	if d == sqlgen.PostgreSQL {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// queryAll runs a statement and returns its rows (copied).
func queryAll(ctx context.Context, e engine.Engine, st sqlgen.Statement) ([][]any, error) {
	rows, err := e.Query(ctx, st)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all [][]any
	for rows.Next() {
		all = append(all, slices.Clone(rows.Values()))
	}
	return all, rows.Err()
}

// sqlRows runs SQL with args and returns its rows, failing t on an error.
func sqlRows(t *testing.T, e engine.Engine, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := queryAll(context.Background(), e, sqlgen.Statement{SQL: sql, Args: args})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// count is the number of rows of table.
func count(t *testing.T, e engine.Engine, table string) int64 {
	t.Helper()
	return sqlRows(t, e, `SELECT count(*) FROM "`+table+`"`)[0][0].(int64)
}

// exec runs statements in one Exec, failing t on an error.
func exec(t *testing.T, e engine.Engine, sqls ...string) {
	t.Helper()
	sts := make([]sqlgen.Statement, len(sqls))
	for i, s := range sqls {
		sts[i].SQL = s
	}
	if _, err := e.Exec(context.Background(), sts); err != nil {
		t.Fatalf("%v: %v", sqls, err)
	}
}

// codes are the string values of the column col of rows, sorted.
func codes(rows [][]any, col int) []string {
	var out []string
	for _, r := range rows {
		s, _ := r[col].(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
