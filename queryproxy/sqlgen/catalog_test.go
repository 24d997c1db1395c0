package sqlgen

import (
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// testCatalog is the small fixed catalog of the golden, semantic and fuzz tests: market
// data (Security, News) and per-user trading tables (Order, Account) with an Owner column.
var testCatalog = Catalog{Tables: []Table{
	{Name: "Security", Columns: []Column{
		{"Id", Integer}, {"Code", String}, {"Name", String}, {"Price", Decimal}, {"Volume", Integer},
		{"Listed", DateTime}, {"Active", Boolean},
	}},
	{Name: "Order", Columns: []Column{
		{"Id", Integer}, {"Owner", String}, {"Code", String}, {"Qty", Integer},
		{"Price", Decimal}, {"Side", String}, {"Note", String},
	}},
	{Name: "News", Columns: []Column{
		{"Id", Integer}, {"Headline", String}, {"Body", String}, {"Published", DateTime},
	}},
	{Name: "Account", Columns: []Column{
		{"Id", Integer}, {"Owner", String}, {"Name", String}, {"Balance", Decimal}, {"Active", Boolean},
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
