package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func TestExecConstraint(t *testing.T) {
	e := openTest(t, Config{})
	tests := map[string]sqlgen.Statement{
		"primary key":           {SQL: `INSERT INTO Item (Id, Name, Qty) VALUES (1, 'dup', 1)`},
		"unique":                {SQL: `INSERT INTO Item (Name, Qty) VALUES ('one', 1)`},
		"not null":              {SQL: `INSERT INTO Item (Name, Qty) VALUES (?, 1)`, Args: []any{nil}},
		"check":                 {SQL: `INSERT INTO Item (Name, Qty) VALUES ('zero', 0)`},
		"foreign key":           {SQL: `INSERT INTO Item (Name, Qty, Parent) VALUES ('orphan', 1, 99)`},
		"composite primary key": {SQL: `INSERT INTO Security (Code, Exchange) VALUES ('BHP', 'ASX')`},
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
	_, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO Nothing VALUES (1)`}})
	if err == nil || errors.Is(err, engine.ErrConstraint) || errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("insert into a missing table: %v", err)
	}
}

// TestExecAtomic: three inserts in one Exec, the third violating NOT NULL: none is kept.
func TestExecAtomic(t *testing.T) {
	e := openTest(t, Config{})
	insert := `INSERT INTO Item (Name, Qty) VALUES (?, ?)`
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
		{SQL: `INSERT INTO Item (Name, Qty) VALUES ('two', 2), ('three', 3), (NULL, 4)`},
	})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1", n)
	}

	n, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: insert, Args: []any{"two", int64(2)}},
		{SQL: `INSERT INTO Item (Name, Qty) VALUES ('three', 3), ('four', 4)`},
	})
	if err != nil || n != 3 {
		t.Fatalf("Exec = %d, %v, want 3 rows", n, err)
	}
	if n := count(t, e, "Item"); n != 4 {
		t.Fatalf("Item has %d rows, want 4", n)
	}
}

// TestExecLocked: a write lock held by another program for longer than the busy timeout
// makes the engine unavailable, not a timeout.
func TestExecLocked(t *testing.T) {
	e := openTest(t, Config{BusyTimeout: 100 * time.Millisecond})
	other, err := sql.Open("sqlite", writerDSN(e.path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin() // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO Item (Name, Qty) VALUES ('two', 2)`}})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	// Reads go on meanwhile (WAL).
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows", n)
	}
}

// TestConcurrent reads and writes at once; under -race.
func TestConcurrent(t *testing.T) {
	e := openTest(t, Config{})
	errs := make(chan error, 40)
	for i := range 40 {
		go func() {
			if i%4 == 0 {
				_, err := e.Exec(context.Background(), []sqlgen.Statement{
					{SQL: `INSERT INTO Item (Name, Qty) VALUES (?, 1)`, Args: []any{"item" + string(rune('A'+i))}},
				})
				errs <- err
				return
			}
			rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT * FROM Security`})
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
