package sqliteengine

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// fakeClock is a Now that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestCatalogCache: the catalog is served from the cache within the check interval, kept
// (not read again) when the schema did not change, and read again when it did.
func TestCatalogCache(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	e := openTest(t, Config{Now: clock.Now, CatalogCheckInterval: time.Minute})
	ctx := context.Background()
	first, err := e.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b sqlgen.Catalog) bool { return &a.Tables[0] == &b.Tables[0] }

	other, err := sql.Open("sqlite", writerDSN(e.path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// No schema change: after the interval, checked but not read again.
	clock.Add(2 * time.Minute)
	if c, _ := e.Catalog(ctx); !same(c, first) {
		t.Fatal("catalog read again without a schema change")
	}
	if _, err := other.Exec(`INSERT INTO Item (Name, Qty) VALUES ('two', 2)`); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Minute)
	if c, _ := e.Catalog(ctx); !same(c, first) {
		t.Fatal("catalog read again after a change of data only")
	}

	// A schema change: not seen within the interval, seen after it.
	if _, err := other.Exec(`ALTER TABLE Item ADD COLUMN Colour TEXT`); err != nil {
		t.Fatal(err)
	}
	clock.Add(30 * time.Second)
	if c, _ := e.Catalog(ctx); !same(c, first) {
		t.Fatal("catalog checked within the check interval")
	}
	clock.Add(31 * time.Second)
	c, err := e.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	item, _ := c.Table("Item")
	if same(c, first) || len(item.Columns) != 5 || item.Columns[4] != (sqlgen.Column{Name: "Colour", Type: sqlgen.String}) {
		t.Fatalf("after ALTER TABLE: Item columns %v", item.Columns)
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
