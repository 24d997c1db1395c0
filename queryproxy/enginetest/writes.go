package enginetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// testConstraint: a write that breaks a constraint of any kind is ErrConstraint; another
// failure is neither that nor ErrUnavailable.
func testConstraint(t *testing.T, open Open) {
	e := open(t, Options{})
	for name, st := range map[string]sqlgen.Statement{
		"primary key": {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (1, 'dup', 1)`},
		"unique":      {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'one', 1)`},
		"not null":    {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, ` + Arg(e.Dialect(), 1) + `, 1)`, Args: []any{nil}},
		"check":       {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'zero', 0)`},
		"foreign key": {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty", "Parent") VALUES (2, 'orphan', 1, 99)`},
		"composite primary key": {SQL: `INSERT INTO "Security" ("Code", "Exchange", "Name", "Currency", "Updated")
			VALUES ('BHP', 'ASX', 'again', 'AUD', '2026-11-21T10:30:00Z')`},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := e.Exec(context.Background(), []sqlgen.Statement{st}); !errors.Is(err, engine.ErrConstraint) {
				t.Fatalf("error %v, want ErrConstraint", err)
			}
		})
	}
	// Other errors are not constraint violations.
	_, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO "Nothing" VALUES (1)`}})
	if err == nil || errors.Is(err, engine.ErrConstraint) || errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("insert into a missing table: %v", err)
	}
}

// testAtomic: statements of one Exec take effect together or not at all (three inserts,
// the third violating NOT NULL; one insert of three rows, likewise), and their rows
// affected add up.
func testAtomic(t *testing.T, open Open) {
	e := open(t, Options{})
	d := e.Dialect()
	insert := `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (` + Arg(d, 1) + `, ` + Arg(d, 2) + `, ` + Arg(d, 3) + `)`
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: insert, Args: []any{int64(2), "two", int64(2)}},
		{SQL: insert, Args: []any{int64(3), "three", int64(3)}},
		{SQL: insert, Args: []any{int64(4), nil, int64(4)}},
	})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1: the first inserts were kept", n)
	}
	// One statement of three rows, likewise.
	_, err = e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'two', 2), (3, 'three', 3), (4, NULL, 4)`},
	})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1", n)
	}

	n, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: insert, Args: []any{int64(2), "two", int64(2)}},
		{SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (3, 'three', 3), (4, 'four', 4)`},
		{SQL: `UPDATE "Item" SET "Qty" = "Qty" + 1 WHERE "Name" IS NOT NULL`},
	})
	if err != nil || n != 7 {
		t.Fatalf("Exec = %d, %v, want 7 rows", n, err)
	}
	if n := count(t, e, "Item"); n != 4 {
		t.Fatalf("Item has %d rows, want 4", n)
	}
}

// testConcurrent reads and writes at once; under -race.
func testConcurrent(t *testing.T, open Open) {
	e := open(t, Options{})
	insert := `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (` + Arg(e.Dialect(), 1) + `, ` + Arg(e.Dialect(), 2) + `, 1)`
	errs := make(chan error, 40)
	for i := range 40 {
		go func() {
			if i%4 == 0 {
				_, err := e.Exec(context.Background(), []sqlgen.Statement{
					{SQL: insert, Args: []any{int64(100 + i), fmt.Sprint("item", i)}},
				})
				errs <- err
				return
			}
			rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT * FROM "Security"`})
			if err == nil {
				for rows.Next() {
				}
				err = errors.Join(rows.Err(), rows.Close())
			}
			if err == nil {
				_, err = e.Catalog(context.Background())
			}
			errs <- err
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := count(t, e, "Item"); n != 11 {
		t.Fatalf("Item has %d rows, want 11", n)
	}
}
