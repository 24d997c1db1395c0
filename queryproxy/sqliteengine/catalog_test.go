package sqliteengine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func TestColumnType(t *testing.T) {
	tests := map[string]sqlgen.Type{
		"INTEGER": sqlgen.Integer, "INT": sqlgen.Integer, "bigint": sqlgen.Integer,
		"UNSIGNED BIG INT": sqlgen.Integer, "INT8": sqlgen.Integer, "TINYINT": sqlgen.Integer,
		"POINT": sqlgen.Integer, // contains INT, as SQLite reads it
		"TEXT":  sqlgen.String, "VARCHAR(20)": sqlgen.String, "NCHAR(5)": sqlgen.String,
		"CLOB": sqlgen.String, "DATETEXT": sqlgen.String, "": sqlgen.String, "  ": sqlgen.String,
		"BLOB": sqlgen.Binary,
		"REAL": sqlgen.Decimal, "DOUBLE PRECISION": sqlgen.Decimal, "FLOAT": sqlgen.Decimal,
		"DECIMAL(10,2)": sqlgen.Decimal, "NUMERIC": sqlgen.Decimal, "MONEY": sqlgen.Decimal,
		"BOOLEAN": sqlgen.Boolean, "bool": sqlgen.Boolean,
		"DATETIME": sqlgen.DateTime, "DATE": sqlgen.DateTime, "TIMESTAMP": sqlgen.DateTime,
		"TIME": sqlgen.DateTime, "timestamp with time zone": sqlgen.DateTime,
	}
	for decl, want := range tests {
		if got := columnType(decl); got != want {
			t.Errorf("columnType(%q) = %s, want %s", decl, got, want)
		}
	}
}

func TestCatalog(t *testing.T) {
	e := openTest(t, Config{Init: testSchema + `
		CREATE TABLE "Order" (OrderId INTEGER PRIMARY KEY AUTOINCREMENT, Price REAL,
			Total REAL GENERATED ALWAYS AS (Price * 2) VIRTUAL);
		INSERT INTO "Order" (Price) VALUES (1.5);`})
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range cat.Tables {
		names = append(names, tb.Name)
	}
	// Sorted; no view (Cheap), no sqlite_sequence.
	if got := strings.Join(names, ","); got != "Item,Order,Security" {
		t.Fatalf("tables %s, want Item,Order,Security", got)
	}
	order, _ := cat.Table("order")
	// Total is a generated column: never written.
	want := []sqlgen.Column{{Name: "OrderId", Type: sqlgen.Integer, Num: sqlgen.NumInt64}, {Name: "Price", Type: sqlgen.Decimal, Num: sqlgen.NumFloat64},
		{Name: "Total", Type: sqlgen.Decimal, Num: sqlgen.NumFloat64, Generated: true}}
	if !equal(order.Columns, want) {
		t.Fatalf("Order columns %v, want %v", order.Columns, want)
	}
	security, _ := cat.Table("Security")
	if len(security.Columns) != 9 || security.Columns[5] != (sqlgen.Column{Name: "Listed", Type: sqlgen.Boolean}) {
		t.Fatalf("Security columns %v", security.Columns)
	}
}

func TestInit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "query.db")
	ctx := context.Background()

	// A script that fails leaves the database empty, and Open fails.
	if e, err := Open(ctx, Config{Path: path, Init: testSchema + `INSERT INTO Nothing VALUES (1);`}); err == nil {
		e.Close()
		t.Fatal("Open succeeded with a failing init script")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode %v, want 0600", fi.Mode().Perm())
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v, %v, want mode 0700", fi.Mode().Perm(), err)
	}

	// Then a good script runs, once.
	e := openTest(t, Config{Path: path})
	if _, err := e.Exec(ctx, []sqlgen.Statement{{SQL: `DELETE FROM Item`}}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = openTest(t, Config{Path: path})
	if n := count(t, e, "Item"); n != 0 {
		t.Fatalf("Item has %d rows: the init script ran again", n)
	}
}
