package sqliteengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// slack is how late a test may see a time limit act on a loaded machine, where a goroutine
// waiting for a timer can wait for a CPU for hundreds of milliseconds.
const slack = 3 * time.Second

// endless counts without end: all its work happens before its one row.
const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c`

func TestQueryTimeLimit(t *testing.T) {
	const limit = 300 * time.Millisecond
	e := openTest(t, Config{StatementTimeout: limit})
	start := time.Now()
	_, _, err := queryAll(t, e, endless)
	elapsed := time.Since(start)
	if !errors.Is(err, engine.ErrTimeout) {
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
// row, so a slow reader gets no row after it. (A step of SQLite already running when the
// limit passes runs on to its row, which is then dropped: the driver interrupts SQLite
// only while it computes the first row.)
func TestQueryTimeLimitBetweenRows(t *testing.T) {
	const limit = 300 * time.Millisecond
	e := openTest(t, Config{StatementTimeout: limit})
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
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

func TestQueryCanceled(t *testing.T) {
	e := openTest(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.Query(ctx, sqlgen.Statement{SQL: endless})
	if !errors.Is(err, engine.ErrCanceled) || errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}

	// The caller's own deadline is a timeout.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.Query(ctx, sqlgen.Statement{SQL: endless}); !errors.Is(err, engine.ErrTimeout) {
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
