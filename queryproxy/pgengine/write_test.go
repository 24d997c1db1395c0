package pgengine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func TestExecConstraint(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	tests := map[string]sqlgen.Statement{
		"primary key":           {SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (1, 'dup', 1)`},
		"unique":                {SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ('one', 1)`},
		"not null":              {SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ($1, 1)`, Args: []any{nil}},
		"check":                 {SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ('zero', 0)`},
		"foreign key":           {SQL: `INSERT INTO "Item" ("Name", "Qty", "Parent") VALUES ('orphan', 1, 99)`},
		"composite primary key": {SQL: `INSERT INTO "Security" ("Code", "Exchange") VALUES ('BHP', 'ASX')`},
		"domain check":          {SQL: `INSERT INTO "Security" ("Code", "Exchange", "Ask") VALUES ('NEW', 'ASX', 5)`},
	}
	for name, st := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := e.Exec(context.Background(), []sqlgen.Statement{st})
			if !errors.Is(err, engine.ErrConstraint) {
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

// TestExecAtomic: three inserts in one Exec, the third violating NOT NULL: none is kept.
func TestExecAtomic(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	insert := `INSERT INTO "Item" ("Name", "Qty") VALUES ($1, $2)`
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: insert, Args: []any{"two", int64(2)}},
		{SQL: insert, Args: []any{"three", int64(3)}},
		{SQL: insert, Args: []any{nil, int64(4)}},
	})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1: the first inserts were kept", n)
	}
	// One statement of three rows, likewise.
	_, err = e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ('two', 2), ('three', 3), (NULL, 4)`},
	})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1", n)
	}

	n, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: insert, Args: []any{"two", int64(2)}},
		{SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ('three', 3), ('four', 4)`},
		{SQL: `UPDATE "Item" SET "Qty" = "Qty" + 1 WHERE "Name" IS NOT NULL`},
	})
	if err != nil || n != 7 {
		t.Fatalf("Exec = %d, %v, want 7 rows", n, err)
	}
	if n := count(t, e, "Item"); n != 4 {
		t.Fatalf("Item has %d rows, want 4", n)
	}
	// A statement without arguments still goes through the extended protocol, which
	// takes one statement only.
	_, err = e.Exec(context.Background(), []sqlgen.Statement{{SQL: `DELETE FROM "Item" WHERE "Id" = 4; DELETE FROM "Item"`}})
	if err == nil || count(t, e, "Item") != 4 {
		t.Fatalf("two statements in one: %v", err)
	}
}

// TestConcurrent reads and writes at once; under -race.
func TestConcurrent(t *testing.T) {
	e, _ := openTest(t, Config{MaxConns: 4}, "")
	errs := make(chan error, 40)
	for i := range 40 {
		go func() {
			if i%4 == 0 {
				_, err := e.Exec(context.Background(), []sqlgen.Statement{
					{SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ($1, 1)`, Args: []any{fmt.Sprint("item", i)}},
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
