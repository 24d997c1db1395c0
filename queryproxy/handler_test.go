package queryproxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// demoTables is the demo's policy (Caddyfile.example) but for its venue filter on
// Security, which venue_test.go and the conformance suite's Venues cases test.
var demoTables = []queryproxy.TablePolicy{
	{Table: "Security", Read: []string{"Service/Market"}},
	{Table: "Market", Read: []string{"Service/Market"}},
	{Table: "News", Read: []string{"Service/News"}},
	{Table: "NewsSources", Read: []string{"Service/News"}},
	{Table: "Account", Read: []string{"Service/Trading"}, Owner: "Owner", Hidden: []string{"InternalRef"}},
	{Table: "Order", Read: []string{"Service/Trading"}, Write: []string{"Service/OrderPad"}, Owner: "Owner", Hidden: []string{"RoutingNote"}, ReadOnly: []string{"OrderId"}},
}

// callers are the test tokens: "Bearer <name>".
var callers = map[string]*queryproxy.Caller{
	"demo":   {Subject: querydb.DemoSubject, ClientID: "demo-app", Scopes: []string{"Service/Market", "Service/News"}},
	"trader": {Subject: querydb.TraderSubject, ClientID: "demo-app", Scopes: []string{"Service/Market", "Service/News", "Service/Trading", "Service/OrderPad"}},
	"viewer": {Subject: querydb.TraderSubject, ClientID: "demo-app", Scopes: []string{"Service/Trading"}},
}

// testService is the handler over a fresh demo database, with a trace of
// every statement the engine ran.
type testService struct {
	srv   *httptest.Server
	h     *queryproxy.Handler
	mu    sync.Mutex
	trace []string
}

func newService(t testing.TB, mod func(*queryproxy.Config)) *testService {
	t.Helper()
	return newServiceWith(t, sqliteengine.Config{}, "", mod)
}

// newServiceWith is newService on an engine configured as ecfg (its Path, Init and Trace
// set here), with extraSQL run after the demo's script. A token "attackerN" is a user of
// its own holding the market scope only.
func newServiceWith(t testing.TB, ecfg sqliteengine.Config, extraSQL string, mod func(*queryproxy.Config)) *testService {
	t.Helper()
	s := &testService{}
	ecfg.Path, ecfg.Init = filepath.Join(t.TempDir(), "q.db"), querydb.SQL+"\n"+extraSQL
	ecfg.Trace = func(sql string, _ []any) { s.mu.Lock(); s.trace = append(s.trace, sql); s.mu.Unlock() }
	eng, err := sqliteengine.Open(context.Background(), ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	cfg := queryproxy.Config{
		Engine: eng, Tables: demoTables, AllowedOrigins: []string{"http://localhost:8080"},
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			c, ok := callers[tok]
			if !ok && strings.HasPrefix(tok, "attacker") {
				return &queryproxy.Caller{Subject: tok, ClientID: "x", Scopes: []string{"Service/Market"}}, true
			}
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
	if s.h, err = queryproxy.New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.h.CheckCatalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(s.h)
	t.Cleanup(s.srv.Close)
	return s
}

// response is a decoded answer.
type response struct {
	status int
	header http.Header
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

func (s *testService) do(t *testing.T, token, method, path, contentType, body string, hdr ...string) *response {
	t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := &response{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		if err := d.Decode(&out.result); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, b, err)
		}
	}
	return out
}

const textPlain = "text/plain; charset=utf-8"
const appJSON = "application/json"

func (s *testService) query(t *testing.T, token, stmt string) *response {
	t.Helper()
	return s.do(t, token, "POST", "/query", textPlain, stmt)
}

// column returns the values of one column of a result.
func (r *response) column(t *testing.T, name string) []string {
	t.Helper()
	c, ok := r.result.Columns[name]
	if !ok {
		t.Fatalf("no column %s in %s", name, r.body)
	}
	var out []string
	for _, row := range r.result.Rows {
		out = append(out, toString(row[c.Index]))
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// serviceWithTables is newServiceWith with extra table policies after the demo's.
func serviceWithTables(t testing.TB, ecfg sqliteengine.Config, extraSQL string, extra []queryproxy.TablePolicy, mod func(*queryproxy.Config)) *testService {
	t.Helper()
	return newServiceWith(t, ecfg, extraSQL, func(c *queryproxy.Config) {
		c.Tables = append(append([]queryproxy.TablePolicy{}, demoTables...), extra...)
		if mod != nil {
			mod(c)
		}
	})
}

// timedPost posts body and returns the status and how long the answer took, giving up
// after limit (status 0).
func timedPost(t testing.TB, url, token, ct, body string, limit time.Duration) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), time.Since(start)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}
