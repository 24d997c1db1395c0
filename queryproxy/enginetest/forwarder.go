package enginetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// OpenForwarder returns a new Forwarder for the test t whose upstream holds the demo's
// tables and rows (examples/querydb) and then Schema's, in a database of its own, and
// lets the caller write them (any token); it stops both when t ends.
type OpenForwarder func(t *testing.T) engine.Forwarder

// RunForwarder runs the part of the suite that holds for a Forwarder on the forwarders
// open returns: its catalog, the operators as canonical IQL, an insert and an insert
// the upstream refuses, and the venue filter in IQL. Each case opens one of its own.
func RunForwarder(t *testing.T, open OpenForwarder) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f engine.Forwarder)
	}{
		{"Catalog", testForwarderCatalog},
		{"Operators", testForwarderOperators},
		{"Insert", testForwarderInsert},
		{"Conflict", testForwarderConflict},
		{"Venues", testForwarderVenues},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

// forward sends the IQL statement src as the handler would (its names resolved with
// sqlgen.Resolve, printed as canonical IQL), without a policy.
func forward(t *testing.T, f engine.Forwarder, src string) (*engine.ForwardResult, error) {
	t.Helper()
	stmt, cat := parse(t, src, f.Catalog)
	table, ok := cat.Table(stmt.TableName())
	if !ok {
		t.Fatalf("%s: no table %s", src, stmt.TableName())
	}
	resolved, cols, err := sqlgen.Resolve(table, stmt)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	_, insert := stmt.(*iql.Insert)
	return f.Forward(context.Background(), engine.ForwardRequest{IQL: iql.Format(resolved), Token: "enginetest",
		RequestID: "enginetest", Write: insert, Columns: cols})
}

// forwardedRows forwards a select and returns its rows.
func forwardedRows(t *testing.T, f engine.Forwarder, src string) [][]any {
	t.Helper()
	res, err := forward(t, f, src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	defer res.Rows.Close()
	var all [][]any
	for res.Rows.Next() {
		all = append(all, slices.Clone(res.Rows.Values()))
	}
	if err := res.Rows.Err(); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return all
}

// testForwarderCatalog: the catalog is the upstream's: the demo's and Schema's tables.
func testForwarderCatalog(t *testing.T, f engine.Forwarder) {
	cat, err := f.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkCatalog(t, cat)
}

// testForwarderOperators runs Operators as canonical IQL.
func testForwarderOperators(t *testing.T, f engine.Forwarder) {
	for _, tt := range Operators {
		t.Run(tt.Where, func(t *testing.T) {
			if got := codes(forwardedRows(t, f, "select Code from Security where "+tt.Where), 0); !slices.Equal(got, tt.Want) {
				t.Fatalf("got %v, want %v", got, tt.Want)
			}
		})
	}
}

// testForwarderInsert: an insert answers the rows it affected, and is there to read.
func testForwarderInsert(t *testing.T, f engine.Forwarder) {
	res, err := forward(t, f, `insert into Item (Id, Name, Qty) values (2, 'two', 2)`)
	if err != nil || res.RowsAffected != 1 {
		t.Fatalf("insert: %v, %v", res, err)
	}
	if rows := forwardedRows(t, f, `select Name from Item where Id = 2`); len(rows) != 1 || rows[0][0] != "two" {
		t.Fatalf("read back: %v", rows)
	}
}

// testForwarderConflict: an insert that breaks a constraint is the upstream's refusal,
// an UpstreamError with its 409.
func testForwarderConflict(t *testing.T, f engine.Forwarder) {
	_, err := forward(t, f, `insert into Item (Id, Name, Qty) values (1, 'again', 1)`)
	ue, ok := errors.AsType[*engine.UpstreamError](err)
	if !ok || ue.Status != 409 || !errors.Is(err, engine.ErrUpstreamRefused) {
		t.Fatalf("error %v, want the upstream's 409", err)
	}
}
