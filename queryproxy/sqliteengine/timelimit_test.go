package sqliteengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/enginetest"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// The statement time limit on reads that the driver's interrupt alone would not stop, and
// on readers that stop reading. These tests ran through the query handler (package
// queryproxy) until the handler kept any one user to half of the read connections
// (max_user_share): since then a burst of one user could not hold every connection
// there. Here they do.

// bigTradeSQL is a market-data table of many rows (as Trade or ChartHistory are upstream):
// the first row is the only one whose Code is 'needle'.
func bigTradeSQL(rows int) string {
	return fmt.Sprintf(`CREATE TABLE Trade (Id INTEGER PRIMARY KEY, Code TEXT NOT NULL, Note TEXT NOT NULL);
INSERT INTO Trade (Id, Code, Note) VALUES (1, 'needle', 'n');
INSERT INTO Trade (Id, Code, Note)
  WITH RECURSIVE c(x) AS (SELECT 2 UNION ALL SELECT x+1 FROM c WHERE x < %d)
  SELECT x, 'C' || x, printf('%%.60c', 'a') FROM c;`, rows)
}

// slowAfterFirstRow is an IQL statement whose first row (Id 1) comes at once and whose
// every other row costs many pattern tests: SQLite computes the second row in one step
// that scans the rest of the table.
func slowAfterFirstRow() string {
	var b strings.Builder
	b.WriteString("SELECT Id FROM Trade WHERE Code = 'needle'")
	pat := strings.Repeat("b", 200)
	for i := 0; b.Len() < 60_000 && i < 250; i++ {
		fmt.Fprintf(&b, " OR Note CONTAINS '%s%d'", pat, i)
	}
	return b.String()
}

// drain reads st's rows to their end and returns the error that ended them.
func drain(e *Engine, st sqlgen.Statement) error {
	rows, err := e.Query(context.Background(), st)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// TestSQLiteTimeLimitAfterFirstRow: the engine holds its statement time limit on a
// statement whose first row is cheap and whose next step scans a large table, for the one
// row its WHERE matches at the end: ErrTimeout. It failed when the driver's interrupt,
// which works only while the first row is computed, and the checks between rows were all
// there was: the read ran some 7 s past a 200 ms limit, holding a read connection, and
// ended without an error (the handler answered 200). (Every SELECT's WHERE now calls the
// engine's row check first.)
func TestSQLiteTimeLimitAfterFirstRow(t *testing.T) {
	const limit = 200 * time.Millisecond
	e := openTest(t, Config{StatementTimeout: limit, Init: testSchema + bigTradeSQL(400_000)})
	start := time.Now()
	if err := drain(e, enginetest.Statement(t, e, slowAfterFirstRow())); !errors.Is(err, engine.ErrTimeout) {
		t.Fatalf("error %v after %v (limit %v), want ErrTimeout", err, time.Since(start), limit)
	}
}

// TestSQLiteReadersNotStarved: the same statement run in a parallel burst on every read
// connection holds none past the time limit, so other queries go on. It failed before the
// row check: they waited for a connection until their own limit and failed with
// ErrTimeout (the handler's 504).
func TestSQLiteReadersNotStarved(t *testing.T) {
	const limit = 300 * time.Millisecond
	e := openTest(t, Config{StatementTimeout: limit, Init: testSchema + bigTradeSQL(150_000)})
	st := enginetest.Statement(t, e, slowAfterFirstRow())
	var wg sync.WaitGroup
	for range DefaultMaxReadConns {
		wg.Go(func() { _ = drain(e, st) })
	}
	// The burst has its connections, and has run past its time limit: without the row
	// check it holds them for seconds more. (A victim sent sooner waits for a connection
	// under its own limit, racing the burst's end on a loaded machine.)
	time.Sleep(limit + limit/2)
	var failed int
	const victims = 5
	for i := range victims {
		start := time.Now()
		_, _, err := queryAll(t, e, `SELECT Code FROM Security`)
		t.Logf("victim %d: %v after %v", i, err, time.Since(start))
		if err != nil {
			failed++
		}
		time.Sleep(limit)
	}
	wg.Wait()
	if failed > 0 {
		t.Errorf("%d of %d other queries failed while a burst held every read connection past the time limit", failed, victims)
	}
}

// TestSQLiteSlowReaderReleases: readers that ask for a large result and stop
// reading it after a row (a client that does not read its answer) do not keep the read
// connections past the time limit (rows.expire gives them back). (It held when written;
// compare TestPostgresSlowReaderReleases in pgengine, which failed.)
func TestSQLiteSlowReaderReleases(t *testing.T) {
	const limit = 500 * time.Millisecond
	big := `CREATE TABLE Trade (Id INTEGER PRIMARY KEY, Note TEXT NOT NULL);
INSERT INTO Trade (Id, Note) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10000)
  SELECT x, printf('%.4000c', 'x') FROM c;`
	e := openTest(t, Config{StatementTimeout: limit, MaxReadConns: 2, Init: testSchema + big})
	for range 2 {
		rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: "SELECT Id, Note FROM Trade"})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		if !rows.Next() {
			t.Fatal(rows.Err())
		}
	}
	time.Sleep(limit + 1500*time.Millisecond)
	start := time.Now()
	_, _, err := queryAll(t, e, `SELECT Code FROM Security`)
	t.Logf("victim: %v after %v", err, time.Since(start))
	if err != nil {
		t.Errorf("another query failed while slow readers held the read connections: %v", err)
	}
}
