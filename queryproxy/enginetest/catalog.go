package enginetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// catalogWant is the catalog of the demo and Schema: the tables in byte-wise order, each
// with its columns in order, as name, Type and "generated" for a generated column.
var catalogWant = []string{
	"Account: AccountId String, Owner String, Name String, Currency String, Balance Decimal, InternalRef String",
	"Doubled: Price Decimal, Total Decimal generated",
	"Item: Id Integer, Name String, Qty Integer, Parent Integer, Active Boolean",
	"Market: Code String, Name String, Country String",
	"News: Id Integer, Headline String, Source String, Published DateTime, Codes String",
	"NewsSources: Code String, Name String",
	"Order: OrderId Integer, Owner String, AccountId String, Code String, Exchange String, Side String, " +
		"Quantity Integer, Price Decimal, Status String, Created DateTime, RoutingNote String",
	"Quote: Id Integer, Code String, Venue String, Price Decimal",
	"Security: Code String, Exchange String, Name String, LastPrice Decimal, Currency String, Volume Integer, Updated DateTime",
}

// describe writes cat as catalogWant does.
func describe(cat sqlgen.Catalog) []string {
	var out []string
	for _, t := range cat.Tables {
		var cols []string
		for _, c := range t.Columns {
			col := c.Name + " " + string(c.Type)
			if c.Generated {
				col += " generated"
			}
			cols = append(cols, col)
		}
		out = append(out, t.Name+": "+strings.Join(cols, ", "))
	}
	return out
}

// checkCatalog fails t unless cat is the demo's and Schema's.
func checkCatalog(t *testing.T, cat sqlgen.Catalog) {
	t.Helper()
	got := describe(cat)
	if strings.Join(got, "\n") != strings.Join(catalogWant, "\n") {
		t.Fatalf("catalog\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(catalogWant, "\n"))
	}
}

// testCatalog: the tables, sorted byte-wise, with their columns in order, each with its
// type; a generated column is marked (it is never written).
func testCatalog(t *testing.T, open Open) {
	cat, err := open(t, Options{}).Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkCatalog(t, cat)
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

// testCatalogCache: the catalog is served from the cache within the check interval, kept
// (not read again) when the schema did not change, and read again when it did.
func testCatalogCache(t *testing.T, open Open) {
	clock := &fakeClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	e := open(t, Options{Now: clock.Now, CatalogCheckInterval: time.Minute})
	ctx := context.Background()
	first, err := e.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b sqlgen.Catalog) bool { return &a.Tables[0] == &b.Tables[0] }

	// No schema change: after the interval, checked but not read again.
	clock.Add(2 * time.Minute)
	if c, _ := e.Catalog(ctx); !same(c, first) {
		t.Fatal("catalog read again without a schema change")
	}
	exec(t, e, `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'two', 2)`)
	clock.Add(2 * time.Minute)
	if c, _ := e.Catalog(ctx); !same(c, first) {
		t.Fatal("catalog read again after a change of data only")
	}

	// A schema change: not seen within the interval, seen after it.
	exec(t, e, `ALTER TABLE "Item" ADD COLUMN "Colour" text`)
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
	if same(c, first) || len(item.Columns) != 6 || item.Columns[5] != (sqlgen.Column{Name: "Colour", Type: sqlgen.String}) {
		t.Fatalf("after ALTER TABLE: Item columns %v", item.Columns)
	}

	// A renamed table is a change too.
	prev := c
	exec(t, e, `ALTER TABLE "Item" RENAME TO "Thing"`)
	clock.Add(2 * time.Minute)
	if c, _ = e.Catalog(ctx); same(c, prev) {
		t.Fatal("after a rename: catalog not read again")
	}
	if _, ok := c.Table("Thing"); !ok {
		t.Fatalf("catalog %v", c)
	}
}
