package sqliteengine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// testSchema is a small database with a column of each kind.
const testSchema = `
CREATE TABLE Security (
	Code TEXT NOT NULL,
	Exchange TEXT NOT NULL,
	Name TEXT,
	LastPrice DECIMAL(12,4),
	Volume INTEGER,
	Listed BOOLEAN,
	Updated DATETIME,
	Logo BLOB,
	Note,
	PRIMARY KEY (Code, Exchange)
);
CREATE TABLE Item (
	Id INTEGER PRIMARY KEY,
	Name TEXT NOT NULL UNIQUE,
	Qty INTEGER CHECK (Qty > 0),
	Parent INTEGER REFERENCES Item(Id)
);
CREATE VIEW Cheap AS SELECT Code FROM Security WHERE LastPrice < 10;
INSERT INTO Security VALUES
	('BHP', 'ASX', 'BHP Group Limited', '37.4800', 12345678, 1, '2026-11-21T10:30:00Z', x'89504e47', 'a note'),
	('CBA', 'ASX', 'Commonwealth Bank', 118.2, 2345678, 0, '2026-11-21T10:31:00Z', NULL, 42),
	('XYZ', 'ASX', NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO Item (Id, Name, Qty) VALUES (1, 'one', 1);
`

// openTest opens an engine on a new database holding testSchema.
func openTest(t *testing.T, cfg Config) *Engine {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "query.db")
	}
	if cfg.Init == "" {
		cfg.Init = testSchema
	}
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

// queryAll runs a query and returns its columns and rows (copied).
func queryAll(t *testing.T, e *Engine, sql string, args ...any) ([]sqlgen.Column, [][]any, error) {
	t.Helper()
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: sql, Args: args})
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
func count(t *testing.T, e *Engine, table string) int64 {
	t.Helper()
	_, rows, err := queryAll(t, e, `SELECT count(*) FROM "`+table+`"`)
	if err != nil {
		t.Fatal(err)
	}
	return rows[0][0].(int64)
}

func TestQueryValues(t *testing.T) {
	e := openTest(t, Config{})
	cols, rows, err := queryAll(t, e, `SELECT * FROM Security ORDER BY Code`)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []sqlgen.Column{
		{Name: "Code", Type: sqlgen.String}, {Name: "Exchange", Type: sqlgen.String},
		{Name: "Name", Type: sqlgen.String}, {Name: "LastPrice", Type: sqlgen.Decimal},
		{Name: "Volume", Type: sqlgen.Integer}, {Name: "Listed", Type: sqlgen.Boolean},
		{Name: "Updated", Type: sqlgen.DateTime}, {Name: "Logo", Type: sqlgen.Binary},
		{Name: "Note", Type: sqlgen.String},
	}
	if !equal(cols, wantCols) {
		t.Errorf("columns %v, want %v", cols, wantCols)
	}
	updated := time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
	want := [][]any{
		{"BHP", "ASX", "BHP Group Limited", 37.48, int64(12345678), true, updated, []byte("\x89PNG"), "a note"},
		{"CBA", "ASX", "Commonwealth Bank", 118.2, int64(2345678), false, updated.Add(time.Minute), nil, int64(42)},
		{"XYZ", "ASX", nil, nil, nil, nil, nil, nil, nil},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if !equal(rows[i][j], want[i][j]) {
				t.Errorf("row %d, %s: %#v, want %#v", i, cols[j].Name, rows[i][j], want[i][j])
			}
		}
	}
	if tm, ok := rows[0][6].(time.Time); !ok || tm.Location() != time.UTC {
		t.Errorf("Updated %#v, want a time in UTC", rows[0][6])
	}
}

// TestQueryExpressionColumn: a column that is no table column has no declared type and
// is reported as String, its values as they come.
func TestQueryExpressionColumn(t *testing.T) {
	e := openTest(t, Config{})
	cols, rows, err := queryAll(t, e, `SELECT count(*) AS n FROM Security`)
	if err != nil {
		t.Fatal(err)
	}
	if cols[0] != (sqlgen.Column{Name: "n", Type: sqlgen.String}) || rows[0][0] != int64(3) {
		t.Fatalf("columns %v, rows %v", cols, rows)
	}
}

// TestBindArgs: bindArgs leaves the caller's slice as it was. (What each kind of value
// binds to is the conformance suite's Values case.)
func TestBindArgs(t *testing.T) {
	args := []any{time.Now(), true}
	bindArgs(args)
	if _, ok := args[0].(time.Time); !ok || args[1] != true {
		t.Error("bindArgs changed its argument")
	}
}

func TestOpenConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no path":            {},
		"negative readers":   {Path: "x.db", MaxReadConns: -1},
		"negative timeout":   {Path: "x.db", StatementTimeout: -time.Second},
		"tiny busy timeout":  {Path: "x.db", BusyTimeout: time.Microsecond},
		"negative cat check": {Path: "x.db", CatalogCheckInterval: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if e, err := Open(context.Background(), cfg); err == nil {
				e.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

// equal compares normalized values, []byte included.
func equal(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []sqlgen.Column:
		y, ok := b.([]sqlgen.Column)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a == b
}
