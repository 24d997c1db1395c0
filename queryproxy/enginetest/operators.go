package enginetest

import (
	"context"
	"slices"
	"testing"
)

// OperatorCase is a WHERE clause on the demo's Security table (examples/querydb) and the
// codes of the rows it selects, sorted (a code listed twice is on two markets).
type OperatorCase struct {
	Where string
	Want  []string
}

// Operators runs every operator of the language, with the comparison rules that must hold
// on every engine: exact and case-sensitive equality, case-sensitive BEGINS, CONTAINS and
// LIKE whose "%" and "_" match themselves, numbers compared by value. The suite's
// Operators case runs them through sqlgen on an Engine, and as canonical IQL through a
// Forwarder; the PostgreSQL engine's tests also compare its answers with SQLite's
// through the handler.
var Operators = []OperatorCase{
	{`Code = 'BHP'`, []string{"BHP", "BHP"}},
	{`Code = "BHP" AND Exchange = 'ASX'`, []string{"BHP"}},
	{`Code <> 'BHP' AND Exchange = 'NYSE'`, nil},
	{`LastPrice > 200`, []string{"CSL", "MQG"}},
	{`LastPrice >= 214.9`, []string{"CSL", "MQG"}},
	{`LastPrice < 0.05`, []string{"BHPX"}},
	{`LastPrice <= 0.0725`, []string{"BHPX", "OBR"}},
	{`Code BEGINS 'BH'`, []string{"BHP", "BHP", "BHPX"}},
	{`Name BEGINS 'bhp'`, []string{"BHPX"}},
	{`Name CONTAINS '%'`, []string{"PCT"}},
	{`Name CONTAINS '_'`, []string{"USC"}},
	{`Name CONTAINS 'case'`, nil},
	{`Name CONTAINS 'CaSe'`, []string{"MXC"}},
	{`Name LIKE 'W*Limited'`, []string{"WES", "WOW"}},
	{`Name LIKE '*"Quoted"*'`, []string{"QTE"}},
	{`Name LIKE '*''*'`, []string{"OBR"}},
	{`Code IN ["ANZ", "CBA", "NOPE"]`, []string{"ANZ", "CBA"}},
	{`LastPrice BETWEEN 30 AND 32`, []string{"WBC", "WOW"}},
	{`LastPrice IS NULL`, nil},
	{`LastPrice IS NOT NULL AND Exchange = 'NYSE'`, []string{"BHP"}},
	{`NOT (Exchange = 'ASX') OR Code = 'XRO'`, []string{"AIR", "BHP", "FPH", "MEL", "RIO", "SPK", "XRO"}},
	{`(Code = 'BHP' OR Code = 'CBA') AND Exchange = 'ASX'`, []string{"BHP", "CBA"}},
}

// testOperators runs Operators through sqlgen, as the handler writes them.
func testOperators(t *testing.T, open Open) {
	e := open(t, Options{})
	for _, tt := range Operators {
		t.Run(tt.Where, func(t *testing.T) {
			rows, err := queryAll(context.Background(), e, Statement(t, e, "select Code from Security where "+tt.Where))
			if err != nil {
				t.Fatal(err)
			}
			if got := codes(rows, 0); !slices.Equal(got, tt.Want) {
				t.Fatalf("got %v, want %v", got, tt.Want)
			}
		})
	}
}
