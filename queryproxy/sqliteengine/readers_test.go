package sqliteengine

import (
	"context"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestReaderStatementsBounded: a reader keeps at most maxCachedStatements statements,
// the least recently used going first; a statement past the bound still runs.
func TestReaderStatementsBounded(t *testing.T) {
	e := openTest(t, Config{})
	c, err := sqlite.NewConnector(readerDSN(e.path, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := readOnlyConnector{c}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := newReader(conn)
	defer r.close()
	ctx := context.Background()
	query := func(q string) int64 {
		t.Helper()
		st, err := r.prepare(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil {
			t.Fatal(err)
		}
		return dest[0].(int64)
	}
	first := query("SELECT 0")
	for i := range maxCachedStatements + 20 {
		q := "SELECT " + strconv.Itoa(i)
		if n := query(q); n != int64(i) {
			t.Fatalf("%s: %d", q, n)
		}
		query("SELECT 0") // kept the most recently used
	}
	if first != 0 || len(r.stmts) != maxCachedStatements {
		t.Fatalf("%d statements kept, want %d", len(r.stmts), maxCachedStatements)
	}
	if _, ok := r.stmts["SELECT 0"]; !ok {
		t.Fatal("the statement used most often was evicted")
	}
	if _, ok := r.stmts["SELECT 1"]; ok {
		t.Fatal("a statement among the least recently used was kept")
	}
	n := 0
	for c := r.lru.next; c != &r.lru; c = c.next {
		if r.stmts[c.query] != c {
			t.Fatalf("list and map disagree on %q", c.query)
		}
		n++
	}
	if n != len(r.stmts) {
		t.Fatalf("%d statements listed, %d in the map", n, len(r.stmts))
	}
}

// TestReadersBounded: a burst of parallel queries never holds more than MaxReadConns
// connections at once, and every query runs.
func TestReadersBounded(t *testing.T) {
	const max = 3
	e := openTest(t, Config{MaxReadConns: max})
	var open, peak atomic.Int32
	connect := e.readers.connect
	e.readers.connect = func(ctx context.Context) (driver.Conn, error) {
		c, err := connect(ctx)
		if err == nil {
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		}
		return c, err
	}
	var taken, takenPeak atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
			if err != nil {
				errs <- err
				return
			}
			n := taken.Add(1)
			for p := takenPeak.Load(); n > p && !takenPeak.CompareAndSwap(p, n); p = takenPeak.Load() {
			}
			time.Sleep(time.Millisecond)
			taken.Add(-1) // before the last Next, which gives the connection back
			for rows.Next() {
			}
			errs <- errors.Join(rows.Err(), rows.Close())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() > max || takenPeak.Load() > max {
		t.Fatalf("%d connections opened, %d queries at once; bound %d", peak.Load(), takenPeak.Load(), max)
	}
	if len(e.readers.idle) != int(peak.Load()) {
		t.Fatalf("%d idle connections after the burst, %d opened", len(e.readers.idle), peak.Load())
	}
}

// TestReadersWait: with every connection taken, a query waits for one until its time
// limit (here the caller's, shorter), and fails then with ErrTimeout; a connection given
// back is taken again.
func TestReadersWait(t *testing.T) {
	e := openTest(t, Config{MaxReadConns: 1})
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = e.Query(ctx, sqlgen.Statement{SQL: `SELECT Code FROM Security`})
	if !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("query with no connection free: %v, want ErrTimeout", err)
	}
	rows.Close()
	rows, err = e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
}

// TestRowsFreeTheirConnection: rows give their connection back as soon as they end,
// before Close (the caller may still be writing the result to a slow client): at their
// last row, at a failed step (which keeps the connection: it is not broken), and at the
// statement time limit even if the caller stops reading. With one connection, a second
// query runs in each case.
func TestRowsFreeTheirConnection(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sql     string
		consume func(t *testing.T, rows engine.Rows)
	}{
		{"last row read", `SELECT Code FROM Security`, func(t *testing.T, rows engine.Rows) {
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"failed step", `SELECT CASE WHEN Code = 'XYZ' THEN json_extract(Code, '$') ELSE 1 END FROM Security`,
			func(t *testing.T, rows engine.Rows) {
				for rows.Next() {
				}
				if rows.Err() == nil {
					t.Fatal("want a step error (malformed JSON)")
				}
			}},
		{"time limit, caller not reading", `SELECT Code FROM Security`, func(t *testing.T, rows engine.Rows) {
			if !rows.Next() {
				t.Fatal(rows.Err())
			}
			time.Sleep(300 * time.Millisecond) // writing to a slow client, past the limit
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := openTest(t, Config{MaxReadConns: 1, StatementTimeout: 100 * time.Millisecond})
			rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: tt.sql})
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			tt.consume(t, rows)
			if n := len(e.readers.idle); n != 1 {
				t.Fatalf("%d idle connections before Close, want 1", n)
			}
			r2, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
			if err != nil {
				t.Fatalf("a second query before the first one's Close: %v", err)
			}
			r2.Close()
			if strings.HasPrefix(tt.name, "time limit") && (rows.Next() || !errors.Is(rows.Err(), engine.ErrTimeout)) {
				t.Fatalf("rows after the time limit: %v, want ErrTimeout", rows.Err())
			}
			if err := rows.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := len(e.readers.slots); n != 1 {
				t.Fatalf("%d connections open, want 1 (given back once)", n)
			}
		})
	}
}

// TestReadersCloseWhileTaken: Close with a query running ends the waiting queries, and
// the running one's connection is closed when its rows are.
func TestReadersCloseWhileTaken(t *testing.T) {
	e, err := Open(context.Background(), Config{Path: t.TempDir() + "/q.db", Init: testSchema, MaxReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error)
	go func() {
		_, err := e.readers.get(context.Background())
		waiting <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, errClosed) {
			t.Fatalf("waiting query: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a query waiting for a connection did not end at Close")
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.readers.slots); n != 0 {
		t.Fatalf("%d connections still open", n)
	}
}

// TestReadersExpire: a connection unused for maxIdle is closed, with its statements; one
// given back later stays open until its own time comes; a query after that opens a
// connection again.
func TestReadersExpire(t *testing.T) {
	e := openTest(t, Config{MaxReadConns: 2})
	p := e.readers
	clock := time.Unix(1_000_000, 0)
	p.now = func() time.Time { return clock }
	r1, r2 := twoQueries(t, e)
	r1.Close()
	clock = clock.Add(3 * time.Minute)
	r2.Close()
	clock = clock.Add(150 * time.Second) // r1's connection idle 5.5 min, r2's 2.5
	p.expire()
	if open, idle := len(p.slots), len(p.idle); open != 1 || idle != 1 {
		t.Fatalf("after the first expiry: %d open, %d idle; want the later one kept", open, idle)
	}
	clock = clock.Add(3 * time.Minute)
	p.expire()
	p.mu.Lock()
	timer := p.expiry
	p.mu.Unlock()
	if open := len(p.slots); open != 0 || timer != nil {
		t.Fatalf("after the second expiry: %d open, timer %v", open, timer != nil)
	}
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
	if err != nil {
		t.Fatalf("a query after every connection expired: %v", err)
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if open := len(p.slots); open != 1 {
		t.Fatalf("%d connections open after a query, want 1", open)
	}
}

// TestReadersExpireOnTheirOwn: the expiry timer runs by itself, again while connections
// are left, until a quiet engine holds none.
func TestReadersExpireOnTheirOwn(t *testing.T) {
	e := openTest(t, Config{MaxReadConns: 2})
	e.readers.maxIdle = 100 * time.Millisecond
	r1, r2 := twoQueries(t, e)
	r1.Close()
	time.Sleep(60 * time.Millisecond)
	r2.Close() // expires after r1's, so the timer must run twice
	deadline := time.Now().Add(5 * time.Second)
	for len(e.readers.slots) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open", len(e.readers.slots))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// twoQueries starts two queries, each holding a connection until its rows are closed.
func twoQueries(t *testing.T, e *Engine) (engine.Rows, engine.Rows) {
	t.Helper()
	var rs [2]engine.Rows
	for i := range rs {
		r, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT Code FROM Security`})
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rs[0], rs[1]
}
