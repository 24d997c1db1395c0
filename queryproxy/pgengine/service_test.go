package pgengine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// The query service over the demo database on PostgreSQL, as queryproxy's own tests run
// it over SQLite (handler_test.go there): the same policy and test tokens.

// demoTables is the demo's policy (Caddyfile.example) but for its venue filter on
// Security (the conformance suite's Venues cases test it), and Slow, a view that sleeps.
var demoTables = []queryproxy.TablePolicy{
	{Table: "Security", Read: []string{"Service/Market"}},
	{Table: "Market", Read: []string{"Service/Market"}},
	{Table: "News", Read: []string{"Service/News"}},
	{Table: "NewsSources", Read: []string{"Service/News"}},
	{Table: "Account", Read: []string{"Service/Trading"}, Owner: "Owner", Hidden: []string{"InternalRef"}},
	{Table: "Order", Read: []string{"Service/Trading"}, Write: []string{"Service/OrderPad"}, Owner: "Owner", Hidden: []string{"RoutingNote"}},
}

// slowView is a view whose every read sleeps on the server for 10 s, unless stopped.
const slowView = `CREATE VIEW "Slow" AS SELECT 'slow' AS "Name", pg_sleep(10)::text AS "Slept";`

var slowPolicy = queryproxy.TablePolicy{Table: "Slow", Read: []string{"Service/Market"}}

// callers are the test tokens: "Bearer <name>".
var callers = map[string]*queryproxy.Caller{
	"demo":   {Subject: querydb.DemoSubject, ClientID: "demo-app", Scopes: []string{"Service/Market", "Service/News"}},
	"trader": {Subject: querydb.TraderSubject, ClientID: "demo-app", Scopes: []string{"Service/Market", "Service/News", "Service/Trading", "Service/OrderPad"}},
	"viewer": {Subject: querydb.TraderSubject, ClientID: "demo-app", Scopes: []string{"Service/Trading"}},
}

// testService is the handler over an engine, with a trace of every statement the engine
// ran (when it is this package's).
type testService struct {
	srv   *httptest.Server
	eng   engine.Engine
	db    string // the PostgreSQL database's name
	mu    sync.Mutex
	trace []string
}

func (s *testService) record(sql string, _ []any) {
	s.mu.Lock()
	s.trace = append(s.trace, sql)
	s.mu.Unlock()
}

// newService serves the demo database on a new PostgreSQL database (with the view Slow),
// through an engine configured by cfg.
func newService(t *testing.T, cfg Config, mod func(*queryproxy.Config)) *testService {
	t.Helper()
	s := &testService{}
	dsn, name := newDatabase(t, querydb.PostgresSQL+slowView)
	cfg.DSN, cfg.Trace = dsn, s.record
	s.eng, s.db = openEngine(t, cfg), name
	s.serve(t, mod)
	return s
}

// newSQLiteService serves the demo database on SQLite, as queryproxy's tests do.
func newSQLiteService(t *testing.T) *testService {
	t.Helper()
	s := &testService{}
	eng, err := sqliteengine.Open(context.Background(), sqliteengine.Config{
		Path: filepath.Join(t.TempDir(), "q.db"), Init: querydb.SQL, Trace: s.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s.eng = eng
	s.serve(t, nil)
	return s
}

func (s *testService) serve(t *testing.T, mod func(*queryproxy.Config)) {
	t.Helper()
	cfg := queryproxy.Config{
		Engine: s.eng, Tables: demoTables, AllowedOrigins: []string{"http://localhost:8080"},
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			c, ok := callers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
				w.WriteHeader(http.StatusUnauthorized)
				return nil, false
			}
			return c, true
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	h, err := queryproxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CheckCatalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
}

// response is a decoded answer.
type response struct {
	status int
	body   string
	result struct {
		Columns map[string]struct {
			Index int
			Type  string
		}
		Rows         [][]any
		RowsAffected *int64
		Error        *struct{ Code, Message, RequestId string }
	}
}

const (
	textPlain = "text/plain; charset=utf-8"
	appJSON   = "application/json"
)

func (s *testService) do(t *testing.T, token, path, contentType, body string) *response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &response{status: resp.StatusCode, body: string(b)}
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		if err := d.Decode(&out.result); err != nil {
			t.Fatalf("%s: body %q: %v", path, b, err)
		}
	}
	return out
}

func (s *testService) query(t *testing.T, token, stmt string) *response {
	t.Helper()
	return s.do(t, token, "/query", textPlain, stmt)
}

// column returns the values of one column of a result, as text.
func (r *response) column(t *testing.T, name string) []string {
	t.Helper()
	c, ok := r.result.Columns[name]
	if !ok {
		t.Fatalf("no column %s in %s", name, r.body)
	}
	var out []string
	for _, row := range r.result.Rows {
		switch v := row[c.Index].(type) {
		case nil:
			out = append(out, "null")
		case string:
			out = append(out, v)
		case json.Number:
			out = append(out, v.String())
		default:
			b, _ := json.Marshal(v)
			out = append(out, string(b))
		}
	}
	return out
}

// bigTradeTable is a table of 10 000 rows of 4 000 bytes each (40 MB): a result more than
// the loopback socket buffers hold.
const bigTradeTable = `
CREATE TABLE "Trade" ("Id" bigint PRIMARY KEY, "Note" text NOT NULL);
INSERT INTO "Trade" SELECT g, repeat('x', 4000) FROM generate_series(1, 10000) g;`

// bigTableService serves the demo database plus bigTradeTable on PostgreSQL with cfg; any
// token "attackerN" is a user with the market scope.
func bigTableService(t *testing.T, cfg Config) (*httptest.Server, string) {
	t.Helper()
	dsn, name := newDatabase(t, querydb.PostgresSQL+bigTradeTable)
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
