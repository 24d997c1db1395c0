package sqlgen

import (
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// BenchmarkParseGenerate measures the gateway's own cost for one typical select: parse the
// IQL text and generate PostgreSQL SQL with an owner and a row cap ("Parse + sqlgen ns/op").
func BenchmarkParseGenerate(b *testing.B) {
	const src = `SELECT Id, Code, Qty, Price FROM Order WHERE Code IN ["BHP", "ANZ", "CBA"] AND Price >= 37.48 AND Side = 'buy' ORDER BY Price DESC LIMIT 100`
	opts := Options{Owner: &Owner{Column: "Owner", Value: "user-1"}, MaxRows: 1000}
	b.ReportAllocs()
	for b.Loop() {
		stmt, err := iql.Parse(src, iql.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Generate(PostgreSQL, testCatalog, stmt, opts); err != nil {
			b.Fatal(err)
		}
	}
}
