package sqliteengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// slack is how late a test may see a time limit act on a loaded machine, where a goroutine
// waiting for a timer can wait for a CPU for hundreds of milliseconds.
const slack = 2 * time.Second

// endless counts without end: all its work happens before its one row.
const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c`

// sparse yields a row every few million steps: its work happens while the rows are read.
const sparse = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c WHERE x % 2000000 = 0`

// TestQueryTimeLimit: the driver interrupts SQLite when the limit passes while the first
// row is computed.
func TestQueryTimeLimit(t *testing.T) {
	const limit = 300 * time.Millisecond
	e := openTest(t, Config{StatementTimeout: limit})
	start := time.Now()
	_, _, err := queryAll(t, e, endless)
	elapsed := time.Since(start)
	if !errors.Is(err, queryproxy.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed < limit || elapsed > limit+slack {
		t.Fatalf("stopped after %v, want about %v", elapsed, limit)
	}
	// The connections that were interrupted serve the next queries.
	for range 2 * DefaultMaxReadConns {
		if n := count(t, e, "Security"); n != 3 {
			t.Fatalf("%d rows", n)
		}
	}
}

// TestQueryTimeLimitBetweenRows: once rows are flowing, the limit is checked before each
// row; a step already running when it passes runs on to its row (the driver interrupts
// only the first step), and no further step starts.
func TestQueryTimeLimitBetweenRows(t *testing.T) {
	e := openTest(t, Config{StatementTimeout: time.Minute})
	start := time.Now()
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: sparse})
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	step := time.Since(start) // the time from one row to the next
	rows.Close()

	limit := step * 3 / 2 // passes during the second step, about
	e2 := openTest(t, Config{Path: e.path, StatementTimeout: limit})
	start = time.Now()
	_, got, err := queryAll(t, e2, sparse)
	elapsed := time.Since(start)
	if !errors.Is(err, queryproxy.ErrTimeout) {
		t.Fatalf("error %v after %d rows, want ErrTimeout", err, len(got))
	}
	if len(got) < 1 || len(got) > 2 || elapsed < limit || elapsed > limit+step+slack {
		t.Fatalf("%d rows in %v with a limit of %v and a row every %v; want 1 or 2 rows, and no step started after the limit",
			len(got), elapsed, limit, step)
	}
}

func TestQueryCanceled(t *testing.T) {
	e := openTest(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.Query(ctx, sqlgen.Statement{SQL: endless})
	if !errors.Is(err, queryproxy.ErrCanceled) || errors.Is(err, queryproxy.ErrTimeout) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}

	// The caller's own deadline is a timeout.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.Query(ctx, sqlgen.Statement{SQL: endless}); !errors.Is(err, queryproxy.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
}

func TestExecTimeLimit(t *testing.T) {
	e := openTest(t, Config{StatementTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO Item (Name, Qty) VALUES ('two', 2)`},
		{SQL: `INSERT INTO Item (Name, Qty) ` + endless[:len(endless)-len("SELECT count(*) FROM c")] + `SELECT 'n' || x, x FROM c WHERE x < 0`},
	})
	if !errors.Is(err, queryproxy.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1: the first insert was kept", n)
	}
}
