package pgengine

// Attacks on the query service on PostgreSQL. The tests not named TestAttack* found bugs,
// now fixed, and say what failed before; the TestAttack* ones held.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
)

// attackBigTable is a table of 10 000 rows of 4 000 bytes each (40 MB): a result more than
// the loopback socket buffers hold.
const attackBigTable = `
CREATE TABLE "Trade" ("Id" bigint PRIMARY KEY, "Note" text NOT NULL);
INSERT INTO "Trade" SELECT g, repeat('x', 4000) FROM generate_series(1, 10000) g;`

// attackService serves the demo database plus attackBigTable on PostgreSQL with cfg; any
// token "attackerN" is a user with the market scope.
func attackService(t *testing.T, cfg Config) (*httptest.Server, string) {
	t.Helper()
	dsn, name := newDatabase(t, querydb.PostgresSQL+attackBigTable)
	cfg.DSN = dsn
	eng := openEngine(t, cfg)
	h, err := queryproxy.New(queryproxy.Config{
		Engine: eng,
		Tables: append(append([]queryproxy.TablePolicy{}, demoTables...), queryproxy.TablePolicy{Table: "Trade", Read: []string{"Service/Market"}}),
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if c, ok := callers[tok]; ok {
				return c, true
			}
			if strings.HasPrefix(tok, "attacker") {
				return &queryproxy.Caller{Subject: tok, ClientID: "x", Scopes: []string{"Service/Market"}}, true
			}
			w.WriteHeader(http.StatusUnauthorized)
			return nil, false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, name
}

// slowReader sends one query on a raw connection and never reads the answer.
func slowReader(t *testing.T, srv *httptest.Server, token, stmt string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
		token, len(stmt), stmt)
	return c
}

func postQuery(srv *httptest.Server, token, stmt string, limit time.Duration) (int, string, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/query", strings.NewReader(stmt))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/plain")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), time.Since(start)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// TestPostgresSlowReaderReleases: a client that asks for a large result and never reads
// it does not keep its pool connection past the statement time limit: the rows expire
// (rows.expire) while the handler is blocked writing to it. It failed when they had no
// expiry: MaxConns such clients (one user suffices: the per-user bound is 4) held the
// pool for as long as they kept their TCP connections open, and every other user's query
// waited for a connection until its own time limit and failed with 504.
func TestPostgresSlowReaderReleases(t *testing.T) {
	const limit = 500 * time.Millisecond
	srv, _ := attackService(t, Config{MaxConns: 2, StatementTimeout: limit})
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

// TestAttackPostgresTimeLimitAfterFirstRow: the statement whose first row is cheap and
// whose later rows cost a long scan (the one that runs past the SQLite engine's limit) is
// stopped on PostgreSQL by the server's statement_timeout. (Held.)
func TestAttackPostgresTimeLimitAfterFirstRow(t *testing.T) {
	const limit = 300 * time.Millisecond
	srv, _ := attackService(t, Config{StatementTimeout: limit})
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

// TestAttackPostgresBadValuesHeld: values the column's type refuses, sent in a parallel
// burst, are 400 with a JSON body naming no SQL, never 500, and no connection is lost.
// (Held.)
func TestAttackPostgresBadValuesHeld(t *testing.T) {
	srv, _ := attackService(t, Config{MaxConns: 2})
	stmts := []string{
		`select Code from Security where Volume = 'abc'`,
		`select Code from Security where Updated = 'not a date'`,
		`select Code from Security where Updated > 'infinity'`,
		`select Code from Security where Volume IN [1, 'x', 2]`,
		`select Code from Security where LastPrice BETWEEN 'a' AND 'b'`,
		`select Code from Security where Volume = 99999999999999999999999999999999999`,
	}
	type res struct {
		st   int
		body string
		stmt string
	}
	out := make(chan res, 4*len(stmts))
	for range 4 {
		for i, s := range stmts {
			go func() {
				st, body, _ := postQuery(srv, fmt.Sprintf("attacker%d", i), s, 20*time.Second)
				out <- res{st, body, s}
			}()
		}
	}
	for range 4 * len(stmts) {
		r := <-out
		if r.st == 0 || r.st >= 500 || !strings.HasPrefix(r.body, "{") || strings.Contains(r.body, "SELECT") || strings.Contains(r.body, "$1") {
			t.Errorf("%s: %d %s", r.stmt, r.st, r.body)
		}
	}
	if st, body, _ := postQuery(srv, "demo", "SELECT Code FROM Market", 10*time.Second); st != 200 {
		t.Errorf("after the burst: %d %s", st, body)
	}
}

// TestPostgresNumberForDateTimeIs400: a number compared with a DateTime column is the
// client's mistake, 400. It failed when sqlgen let it through: bound as an int64 for a
// timestamptz parameter, which pgx cannot encode, it was answered 500 internal_error and
// logged at error level, once per request (a caller could flood the error log and the 5xx
// metrics at will).
func TestPostgresNumberForDateTimeIs400(t *testing.T) {
	srv, _ := attackService(t, Config{})
	for _, stmt := range []string{
		`select Code from Security where Updated = 123`,
		`select Code from Security where Updated BETWEEN 1 AND 2`,
	} {
		st, body, _ := postQuery(srv, "attacker1", stmt, 10*time.Second)
		if st != 400 {
			t.Errorf("%s: %d %s, want 400", stmt, st, body)
		}
	}
}
