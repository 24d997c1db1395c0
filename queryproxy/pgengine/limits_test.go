package pgengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// slack is how late a test may see a time limit act on a loaded machine.
const slack = 3 * time.Second

// sleep is a statement that runs for 10 s on the server, unless stopped; the marker
// lets pg_stat_activity find it.
const sleep = `SELECT 'pgengine sleeper' AS marker, pg_sleep(10)`

// waitStopped waits, up to slack, until no backend of database name runs a statement
// containing marker; it fails the test if one still does.
func waitStopped(t *testing.T, name, marker string) {
	t.Helper()
	a := admin(t)
	deadline := time.Now().Add(slack)
	for {
		_, running := backends(t, a, name, marker)
		if running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends still run the statement on the server %v after its context ended", running, slack)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestQueryTimeLimit(t *testing.T) {
	const limit = 300 * time.Millisecond
	e, name := openTest(t, Config{StatementTimeout: limit, MaxConns: 2}, "")
	start := time.Now()
	_, _, err := queryAll(t, e, sleep)
	elapsed := time.Since(start)
	if !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed < limit || elapsed > limit+slack {
		t.Fatalf("stopped after %v, want about %v", elapsed, limit)
	}
	waitStopped(t, name, "pgengine sleeper")
	// The connections serve the next queries.
	for range 4 {
		if n := count(t, e, "Security"); n != 3 {
			t.Fatalf("%d rows", n)
		}
	}
}

// TestServerStatementTimeout checks the server's half of the time limit alone: with the
// engine's own limit far away, the server's statement_timeout (set by the engine for each
// transaction) stops the statement, and that is ErrTimeout too.
func TestServerStatementTimeout(t *testing.T) {
	e, _ := openTest(t, Config{StatementTimeout: 400 * time.Millisecond}, "")
	// Give the engine's context 10 s more than the server's limit, so only the server's
	// statement_timeout can stop the sleep within the test's bound.
	e.cfg.StatementTimeout = 10 * time.Second
	start := time.Now()
	_, _, err := queryAll(t, e, sleep)
	if !errors.Is(err, engine.ErrTimeout) || time.Since(start) > slack {
		t.Fatalf("error %v after %v, want ErrTimeout after about 400ms", err, time.Since(start))
	}
}

// TestQueryTimeLimitWhileWaiting: Next waiting for a row when the limit passes ends the
// rows and frees the connection at once, not at Close: the caller may write what it has
// to a client that does not read before it closes them. (The limit between rows is the
// conformance suite's Limits case.)
func TestQueryTimeLimitWhileWaiting(t *testing.T) {
	e, _ := openTest(t, Config{StatementTimeout: 300 * time.Millisecond}, "")
	slow, err := e.Query(context.Background(), sqlgen.Statement{SQL: `SELECT x, pg_sleep(0.2) FROM generate_series(1, 100) x`})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	for slow.Next() {
	}
	if err := slow.Err(); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if n := e.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still taken from the pool before Close", n)
	}
}

// TestQueryCanceled: when the caller's context is canceled (the client went away), Query
// returns ErrCanceled at once, and the statement stops on the server (a cancel request,
// not a connection that is merely dropped: pg_stat_activity shows no backend still
// running it).
func TestQueryCanceled(t *testing.T) {
	e, name := openTest(t, Config{StatementTimeout: 30 * time.Second, MaxConns: 2}, "")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := queryCtx(ctx, e, sleep)
	if !errors.Is(err, engine.ErrCanceled) || errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("returned after %v", elapsed)
	}
	waitStopped(t, name, "pgengine sleeper")

	// The connection was kept: the engine still holds its connections, and they work.
	a := admin(t)
	if conns, _ := backends(t, a, name, ""); conns == 0 || conns > 2 {
		t.Errorf("%d connections after the cancel, want 1 or 2", conns)
	}
	if n := count(t, e, "Security"); n != 3 {
		t.Fatalf("%d rows", n)
	}

	// Canceled while the rows are read (each row large enough for the server to send it at
	// once): the statement stops on the server too.
	ctx, cancel = context.WithCancel(context.Background())
	rows, err := e.Query(ctx, sqlgen.Statement{SQL: `SELECT 'pgengine streamer' AS marker, x, repeat('x', 10000), pg_sleep(0.01) FROM generate_series(1, 100000) x`})
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	cancel()
	for rows.Next() {
	}
	if err := rows.Err(); !errors.Is(err, engine.ErrCanceled) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	rows.Close()
	waitStopped(t, name, "pgengine streamer")

	// The caller's own deadline is a timeout.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := queryCtx(ctx, e, sleep); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	waitStopped(t, name, "pgengine sleeper")
}

func TestExecTimeLimit(t *testing.T) {
	e, name := openTest(t, Config{StatementTimeout: 300 * time.Millisecond}, "")
	start := time.Now()
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO "Item" ("Name", "Qty") VALUES ('two', 2)`},
		{SQL: `INSERT INTO "Item" ("Name", "Qty") SELECT 'pgengine sleeper', 1 FROM pg_sleep(10)`},
	})
	if !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v, want ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > slack {
		t.Fatalf("stopped after %v", elapsed)
	}
	waitStopped(t, name, "pgengine sleeper")
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows, want 1: the first insert was kept", n)
	}
}

// TestBoundedPool: a burst of parallel statements, some canceled on the way, never opens
// more than MaxConns connections on the server (pg_stat_activity, sampled throughout),
// and the others all succeed.
func TestBoundedPool(t *testing.T) {
	const maxConns = 3
	e, name := openTest(t, Config{MaxConns: maxConns, StatementTimeout: 20 * time.Second}, "")
	a := admin(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				sampled <- nil
				return
			default:
			}
			conns, _, err := countBackends(a, name, "")
			if err != nil {
				sampled <- err
				return
			}
			if int64(conns) > peak.Load() {
				peak.Store(int64(conns))
			}
		}
	}()
	const burst = 24
	var wg sync.WaitGroup
	errs := make(chan error, burst)
	for i := range burst {
		wg.Go(func() {
			ctx := context.Background()
			if i%3 == 0 { // canceled while it runs, or while it waits for a connection
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(time.Duration(50+10*i)*time.Millisecond, cancel)
			}
			_, rows, err := queryCtx(ctx, e, `SELECT count(*) FROM "Security", pg_sleep(0.2)`)
			switch {
			case i%3 == 0 && errors.Is(err, engine.ErrCanceled), i%3 == 0 && err == nil:
			case err != nil:
				errs <- err
			case rows[0][0] != int64(3):
				errs <- errors.New("wrong count")
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-sampled; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := peak.Load(); p > maxConns || p == 0 {
		t.Fatalf("peak of %d connections on the server, want 1 to %d", p, maxConns)
	}
	if st := e.pool.Stat(); st.TotalConns() > maxConns {
		t.Fatalf("the pool holds %d connections", st.TotalConns())
	}
}

// TestPostgresSlowReaderReleases: a client that asks for a large result and never reads
// it does not keep its pool connection past the statement time limit: the rows expire
// (rows.expire) while the handler is blocked writing to it. It failed when they had no
// expiry: MaxConns such clients (one user suffices: the per-user bound is 4) held the
// pool for as long as they kept their TCP connections open, and every other user's query
// waited for a connection until its own time limit and failed with 504.
func TestPostgresSlowReaderReleases(t *testing.T) {
	const limit = 500 * time.Millisecond
	srv, _ := bigTableService(t, Config{MaxConns: 2, StatementTimeout: limit})
	for range 2 {
		slowReader(t, srv, "attacker1", `SELECT Id, Note FROM Trade`)
	}
	time.Sleep(limit + 1500*time.Millisecond) // well past the attackers' statement time limit
	var failed int
	const victims = 3
	for i := range victims {
		st, body, d := postQuery(srv, "demo", "SELECT Code FROM Market", 20*time.Second)
		t.Logf("victim %d: %d after %v: %.120s", i, st, d, body)
		if st != 200 {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d queries of another user failed: two clients that do not read their results hold the pool's connections past the time limit", failed, victims)
	}
}

// TestPostgresTimeLimitAfterFirstRow: the statement whose first row is cheap and
// whose later rows cost a long scan (the one that runs past the SQLite engine's limit) is
// stopped on PostgreSQL by the server's statement_timeout. (It held when written.)
func TestPostgresTimeLimitAfterFirstRow(t *testing.T) {
	const limit = 300 * time.Millisecond
	srv, _ := bigTableService(t, Config{StatementTimeout: limit})
	var b strings.Builder
	b.WriteString("SELECT Id FROM Trade WHERE Id = 1")
	pat := strings.Repeat("b", 200)
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&b, " OR Note CONTAINS '%s%d'", pat, i)
	}
	st, body, d := postQuery(srv, "attacker1", b.String(), 60*time.Second)
	t.Logf("status %d after %v: %.150s", st, d, body)
	if d > limit+3*time.Second {
		t.Errorf("a read ran %v against a time limit of %v", d, limit)
	}
}
