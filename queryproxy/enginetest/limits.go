package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// endless counts without end (until an integer overflows, long after any time limit):
// all its work happens before its one row.
const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c`

// testQueryTimeLimit: a read that runs past the statement time limit before its first row
// is stopped at about the limit with ErrTimeout, and the engine's connections serve the
// next reads.
func testQueryTimeLimit(t *testing.T, open Open) {
	const limit = 300 * time.Millisecond
	e := open(t, Options{StatementTimeout: limit})
	start := time.Now()
	_, err := queryAll(context.Background(), e, sqlgen.Statement{SQL: endless})
	elapsed := time.Since(start)
	if !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed < limit || elapsed > limit+slack {
		t.Fatalf("stopped after %v, want about %v", elapsed, limit)
	}
	// The connections that were interrupted serve the next queries.
	for range 8 {
		if n := count(t, e, "Market"); n != 4 {
			t.Fatalf("%d rows", n)
		}
	}
}

// testTimeLimitBetweenRows: once rows are flowing, the limit is checked before each row,
// so a slow reader gets no row after it.
func testTimeLimitBetweenRows(t *testing.T, open Open) {
	const limit = 300 * time.Millisecond
	e := open(t, Options{StatementTimeout: limit})
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT "Code" FROM "Security"`})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	time.Sleep(limit + 50*time.Millisecond)
	start := time.Now()
	if rows.Next() {
		t.Fatalf("row %v read after the time limit", rows.Values())
	}
	if err := rows.Err(); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("Next took %v", elapsed)
	}
}

// testCanceled: a read whose caller's context is canceled (the client went away) ends at
// once with ErrCanceled, not ErrTimeout; the caller's own deadline is a timeout.
func testCanceled(t *testing.T, open Open) {
	e := open(t, Options{StatementTimeout: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := queryAll(ctx, e, sqlgen.Statement{SQL: endless})
	if !errors.Is(err, engine.ErrCanceled) || errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := queryAll(ctx, e, sqlgen.Statement{SQL: endless}); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
}

// testExecTimeLimit: a write past the statement time limit is stopped with ErrTimeout,
// and nothing of its transaction is kept.
func testExecTimeLimit(t *testing.T, open Open) {
	e := open(t, Options{StatementTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'two', 2)`},
		{SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") ` + endless[:len(endless)-len("SELECT count(*) FROM c")] +
			`SELECT x, 'n' || x, x FROM c WHERE x < 0`},
	})
	if !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1: the first insert was kept", n)
	}
}
