package sqlgen

import (
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// testCatalog is the small fixed catalog of the golden, semantic and fuzz tests: market
// data (Security, News) and per-user trading tables (Order, Account) with an Owner column.
var testCatalog = Catalog{Tables: []Table{
	{Name: "Security", Columns: []Column{
		{Name: "Id", Type: Integer}, {Name: "Code", Type: String}, {Name: "Name", Type: String}, {Name: "Price", Type: Decimal}, {Name: "Volume", Type: Integer},
		{Name: "Listed", Type: DateTime}, {Name: "Active", Type: Boolean},
	}},
	{Name: "Order", Columns: []Column{
		{Name: "Id", Type: Integer}, {Name: "Owner", Type: String}, {Name: "Code", Type: String}, {Name: "Qty", Type: Integer},
		{Name: "Price", Type: Decimal}, {Name: "Side", Type: String}, {Name: "Note", Type: String},
	}},
	{Name: "News", Columns: []Column{
		{Name: "Id", Type: Integer}, {Name: "Headline", Type: String}, {Name: "Body", Type: String}, {Name: "Published", Type: DateTime},
	}},
	{Name: "Account", Columns: []Column{
		{Name: "Id", Type: Integer}, {Name: "Owner", Type: String}, {Name: "Name", Type: String}, {Name: "Balance", Type: Decimal}, {Name: "Active", Type: Boolean},
	}},
}}

// mustParse parses an IQL statement or fails the test.
func mustParse(t testing.TB, src string) iql.Statement {
	t.Helper()
	stmt, err := iql.Parse(src, iql.Limits{})
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return stmt
}

// A name resolves to the table or column spelled exactly so, else to the
// only one spelled so but for ASCII case; several of those and none exact
// resolve to none (PostgreSQL's quoted names may differ in case alone),
// never to whichever comes first.
func TestLookupExactFirstAmbiguousNone(t *testing.T) {
	cat := Catalog{Tables: []Table{
		{Name: "Orders", Columns: []Column{{Name: "Owner", Type: String}, {Name: "owner", Type: String}, {Name: "Id", Type: Integer}}},
		{Name: "orders"},
		{Name: "News"},
	}}
	for _, tt := range []struct{ name, want string }{
		{"orders", "orders"}, {"Orders", "Orders"}, {"ORDERS", ""}, {"news", "News"}, {"none", ""},
	} {
		got, ok := cat.Table(tt.name)
		if ok != (tt.want != "") || got.Name != tt.want {
			t.Errorf("Table(%q) = %q, %v; want %q", tt.name, got.Name, ok, tt.want)
		}
	}
	orders, _ := cat.Table("Orders")
	for _, tt := range []struct{ name, want string }{
		{"owner", "owner"}, {"Owner", "Owner"}, {"OWNER", ""}, {"ID", "Id"},
	} {
		got, ok := orders.Column(tt.name)
		if ok != (tt.want != "") || got.Name != tt.want {
			t.Errorf("Column(%q) = %q, %v; want %q", tt.name, got.Name, ok, tt.want)
		}
	}
}
