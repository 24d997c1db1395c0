package enginetest

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// testClosed: after Close, Query and Exec fail with ErrUnavailable.
func testClosed(t *testing.T, open Open) {
	e := open(t, Options{})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(context.Background(), sqlgen.Statement{SQL: "SELECT 1"}); !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("Query after Close: %v, want ErrUnavailable", err)
	}
	if _, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: "SELECT 1"}}); !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("Exec after Close: %v, want ErrUnavailable", err)
	}
}

// testTrace: Options.Trace sees the statements Query and Exec run, with their arguments,
// and not the engine's own (the catalog's).
func testTrace(t *testing.T, open Open) {
	type call struct {
		sql  string
		args []any
	}
	calls := make(chan call, 10)
	e := open(t, Options{Trace: func(sql string, args []any) { calls <- call{sql, args} }})
	d := e.Dialect()
	sel := `SELECT "Code" FROM "Security" WHERE "Code" = ` + Arg(d, 1)
	ins := `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (` + Arg(d, 1) + `, ` + Arg(d, 2) + `, ` + Arg(d, 3) + `)`
	sqlRows(t, e, sel, "BHP")
	if _, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: ins, Args: []any{int64(2), "two", int64(2)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Catalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(calls)
	var got []call
	for c := range calls {
		got = append(got, c)
	}
	if len(got) != 2 || got[0].sql != sel || got[0].args[0] != "BHP" || got[1].sql != ins || got[1].args[2] != int64(2) {
		t.Fatalf("traced %v", got)
	}
}
