package iqengine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// upstream is a fake of the platform's query service: it records what it
// receives and answers what the test sets.
type upstream struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	status int
	ctype  string
	body   string
	delay  time.Duration
}

type received struct {
	path, auth, requestID, contentType, body string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{status: 200, ctype: "application/json; charset=utf-8"}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got = append(u.got, received{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Request-Id"), r.Header.Get("Content-Type"), string(b)})
		status, ctype, body, delay := u.status, u.ctype, u.body, u.delay
		u.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) answer(status int, body string) {
	u.mu.Lock()
	u.status, u.body = status, body
	u.mu.Unlock()
}

func (u *upstream) received() []received {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]received(nil), u.got...)
}

var catalog = sqlgen.Catalog{Tables: []sqlgen.Table{
	{Name: "Security", Columns: []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "Exchange", Type: sqlgen.String},
		{Name: "Name", Type: sqlgen.String}, {Name: "LastPrice", Type: sqlgen.Decimal}}},
	{Name: "Order", Columns: []sqlgen.Column{{Name: "OrderId", Type: sqlgen.Integer}, {Name: "Code", Type: sqlgen.String},
		{Name: "Quantity", Type: sqlgen.Integer}, {Name: "RoutingNote", Type: sqlgen.String}}},
}}

var tables = []queryproxy.TablePolicy{
	{Table: "Security", Read: []string{"Service/Market"}},
	{Table: "Order", Read: []string{"Service/Trading"}, Write: []string{"Service/OrderPad"}, Hidden: []string{"RoutingNote"}},
}

// service is the query handler over the iq engine and the fake upstream.
func service(t *testing.T, u *upstream, timeout time.Duration) *httptest.Server {
	t.Helper()
	eng, err := iqengine.New(iqengine.Config{URL: u.srv.URL + "/iq/", Catalog: catalog, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	h, err := queryproxy.New(queryproxy.Config{Forwarder: eng, Tables: tables, MaxRows: 3,
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			return &queryproxy.Caller{Subject: "u-trader", ClientID: "app", Token: tok,
				Scopes: []string{"Service/Market", "Service/Trading", "Service/OrderPad"}}, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CheckCatalog(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, path, ct, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok-123")
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Request-Id", "|abc.1.")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const iqlType = "text/plain; charset=utf-8"

// TestForwardedStatements: what the upstream receives is canonical IQL in
// its documented grammar, names in the catalog's spelling, literals
// re-quoted, "*" expanded to the visible columns, no owner filter; with
// the caller's token and Request-Id; its answer comes back unchanged.
func TestForwardedStatements(t *testing.T) {
	u := newUpstream(t)
	srv := service(t, u, 0)
	answer := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":[["BHP",37.4800]]}`
	for _, tt := range []struct {
		path, ct, body, want string
		write                bool
	}{
		{"/query", iqlType, `select code, lastprice from security where code = "BHP" and EXCHANGE = 'ASX'`,
			`SELECT Code, LastPrice FROM Security WHERE Code = 'BHP' AND Exchange = 'ASX'`, false},
		{"/query", iqlType, `select Code, LastPrice from Security where Name like 'O''B*' or Code IN ["BHP", 'CBA'] or LastPrice between 1 and 2.50 or Name is null`,
			`SELECT Code, LastPrice FROM Security WHERE Name LIKE "O'B*" OR Code IN ['BHP', 'CBA'] OR LastPrice BETWEEN 1 AND 2.50 OR Name IS NULL`, false},
		{"/query/security/select?columns=Code,LastPrice", "application/json", `[{"ColumnName":"code","Operator":"BEGINS","Value":"B"},{"ColumnName":"LastPrice","Operator":">=","Value":10.10}]`,
			`SELECT Code, LastPrice FROM Security WHERE Code BEGINS 'B' AND LastPrice >= 10.10`, false},
		{"/query/Order/insert", "application/json", `{"code":"WES","Quantity":25}`,
			`INSERT INTO Order (Code, Quantity) VALUES ('WES', 25)`, true},
	} {
		if tt.write {
			u.answer(200, `{"RowsAffected":1}`)
		} else {
			u.answer(200, answer)
		}
		status, body := post(t, srv, tt.path, tt.ct, tt.body)
		if status != 200 {
			t.Fatalf("%s: %d %s", tt.body, status, body)
		}
		if !tt.write && body != answer || tt.write && body != "{\"RowsAffected\":1}\n" {
			t.Fatalf("%s: answer %s", tt.body, body)
		}
		got := u.received()
		last := got[len(got)-1]
		if last.body != tt.want || last.path != "/iq/query" || last.auth != "Bearer tok-123" || last.requestID != "|abc.1." || last.contentType != iqlType {
			t.Fatalf("upstream received %+v\nwant %s", last, tt.want)
		}
	}
	// "*" lists the visible columns: the hidden one is never asked for.
	u.answer(200, `{"Columns":{"OrderId":{"Index":0},"Code":{"Index":1},"Quantity":{"Index":2}},"Rows":[]}`)
	if status, body := post(t, srv, "/query", iqlType, "select * from Order where Quantity > 1"); status != 200 {
		t.Fatalf("select *: %d %s", status, body)
	}
	if got := u.received(); got[len(got)-1].body != `SELECT OrderId, Code, Quantity FROM Order WHERE Quantity > 1` {
		t.Fatalf("select * sent as %q", got[len(got)-1].body)
	}
}

// TestExtensionsRefused: our extensions are refused with 400 and nothing
// reaches the upstream.
func TestExtensionsRefused(t *testing.T) {
	u := newUpstream(t)
	srv := service(t, u, 0)
	for _, stmt := range []string{
		"select Code from Security order by Code",
		"select Code from Security limit 1",
		"select Code from Security where not Code = 'BHP'",
		"select Code from Security where (Code = 'BHP' or Code = 'CBA') and Exchange = 'ASX'",
		"select Code from Security where Code <> 'BHP'",
		"select Code from Security where Name is not null",
		"update Order set Quantity = 1 where OrderId = 1",
		"delete from Order where OrderId = 1",
		"insert into Order (Code, Quantity) values ('A', 1), ('B', 2)",
		"select RoutingNote from Order",
		"select Code from Order where RoutingNote = 'x'",
	} {
		status, body := post(t, srv, "/query", iqlType, stmt)
		if status != 400 && status != 404 {
			t.Fatalf("%s: %d %s", stmt, status, body)
		}
	}
	if got := u.received(); len(got) != 0 {
		t.Fatalf("the upstream received %q", got)
	}
}

// TestAnswersChecked: a bad answer is 502 (a hidden or unasked column
// too), more rows than allowed 422, the upstream's own failures map to
// 503/504 and its refusals to client errors.
func TestAnswersChecked(t *testing.T) {
	u := newUpstream(t)
	srv := service(t, u, 300*time.Millisecond)
	stmt := "select Code, LastPrice from Security"
	two := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":%s}`
	for _, tt := range []struct {
		name   string
		status int
		body   string
		want   int
		code   string
	}{
		{"not JSON", 200, `<html>`, 502, "bad_gateway"},
		{"no Rows", 200, `{"Columns":{}}`, 502, "bad_gateway"},
		{"an unasked column", 200, `{"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1},"InternalRef":{"Index":2}},"Rows":[]}`, 502, "bad_gateway"},
		{"columns out of order", 200, `{"Columns":{"Code":{"Index":1},"LastPrice":{"Index":0}},"Rows":[]}`, 502, "bad_gateway"},
		{"short row", 200, strings.Replace(two, "%s", `[["BHP"]]`, 1), 502, "bad_gateway"},
		{"nested value", 200, strings.Replace(two, "%s", `[["BHP",{"a":1}]]`, 1), 502, "bad_gateway"},
		{"trailing data", 200, strings.Replace(two, "%s", `[]`, 1) + `{}`, 502, "bad_gateway"},
		{"too many rows", 200, strings.Replace(two, "%s", `[["A",1],["B",2],["C",3],["D",4]]`, 1), 422, "result_too_large"},
		{"upstream 500", 500, `oops`, 502, "bad_gateway"},
		{"upstream 503", 503, ``, 503, "unavailable"},
		{"upstream 400", 400, `{"Error":{"Code":"syntax"}}`, 400, "invalid_statement"},
		{"upstream 401", 401, ``, 403, "forbidden"},
		{"upstream redirect", 302, ``, 502, "bad_gateway"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u.answer(tt.status, tt.body)
			status, body := post(t, srv, "/query", iqlType, stmt)
			var e struct {
				Error struct{ Code, Message string }
			}
			_ = json.Unmarshal([]byte(body), &e)
			if status != tt.want || e.Error.Code != tt.code {
				t.Fatalf("%d %s", status, body)
			}
			if strings.Contains(body, "oops") || strings.Contains(body, "InternalRef") || strings.Contains(body, "127.0.0.1") {
				t.Fatalf("upstream detail in %s", body)
			}
		})
	}
	t.Run("time limit", func(t *testing.T) {
		u.mu.Lock()
		u.delay, u.status, u.body = 5*time.Second, 200, strings.Replace(two, "%s", `[]`, 1)
		u.mu.Unlock()
		start := time.Now()
		status, body := post(t, srv, "/query", iqlType, stmt)
		if status != 504 || time.Since(start) > 3*time.Second {
			t.Fatalf("%d %s after %v", status, body, time.Since(start))
		}
		u.mu.Lock()
		u.delay = 0
		u.mu.Unlock()
	})
	t.Run("unreachable", func(t *testing.T) {
		down := newUpstream(t)
		srv2 := service(t, down, 0)
		down.srv.Close()
		if status, body := post(t, srv2, "/query", iqlType, stmt); status != 503 {
			t.Fatalf("%d %s", status, body)
		}
	})
}

func TestCatalogueInMemory(t *testing.T) {
	u := newUpstream(t)
	srv := service(t, u, 0)
	status, body := post(t, srv, "/query", iqlType, "select * from CatalogueTable")
	if status != 200 || body != `{"Columns":{"Name":{"Index":0,"Type":"String"},"IsSystem":{"Index":1,"Type":"Boolean"}},"Rows":[["Security",false],["Order",false],["CatalogueTable",true]]}` {
		t.Fatalf("%d %s", status, body)
	}
	if status, _ := post(t, srv, "/query", iqlType, "select Name from CatalogueTable where IsSystem = false"); status != 400 {
		t.Fatalf("WHERE on the in-memory catalogue: %d", status)
	}
	if len(u.received()) != 0 {
		t.Fatal("the catalogue reached the upstream")
	}
}

// TestAnswerShapes: a select's answer is read in either member order (the
// upstream sends Rows first), with whitespace around it and members of the
// upstream's own, at the top or in a column's descriptor, skipped; the
// result is rebuilt from it. Anything else is 502: Rows or Columns missing,
// twice or in another case, a column not asked, out of place or without
// Index, a row of another length, a nested value, data after the object.
func TestAnswerShapes(t *testing.T) {
	const cols = `"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Type":"x","Index":1}}`
	const rows = `"Rows":[["BHP",37.4800],[null,-1e2],["\u00e9",true]]`
	const head = `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":`
	const want = head + `[["BHP",37.4800],[null,-1e2],["é",true]]}`
	for _, tt := range []struct {
		name, answer string
		want         string // the result; "": a 502
	}{
		{"rows first", `{` + rows + `,` + cols + `}`, want},
		{"columns first", "\n {" + cols + ",\n" + rows + "}\r\n", want},
		{"no rows", `{"Rows":[],` + cols + `}`, head + `[]}`},
		{"members of its own", `{"Total":3,` + rows + `,"Meta":{"a":[1,{"b":2}]},` + cols + `}`, want},
		{"a descriptor's own members", `{` + rows + `,"Columns":{"Code":{"Index":0,"Width":[8,{"x":1}]},"LastPrice":{"Index":1}}}`, want},
		{"no Columns", `{` + rows + `}`, ""},
		{"Rows twice", `{` + rows + `,` + cols + `,"Rows":[]}`, ""},
		{"rows in another case", `{` + rows + `,"rows":[],` + cols + `}`, ""},
		{"columns in another case", `{` + rows + `,"columns":{}}`, ""},
		{"a column not asked", `{"Rows":[],"Columns":{"Code":{"Index":0},"LastPrice":{"Index":1},"Name":{"Index":2}}}`, ""},
		{"a column out of place", `{"Rows":[],"Columns":{"Code":{"Index":1},"LastPrice":{"Index":0}}}`, ""},
		{"a column without Index", `{"Rows":[],"Columns":{"Code":{"Index":0},"LastPrice":{"Type":"Decimal"}}}`, ""},
		{"a row too short", `{"Rows":[["BHP"]],` + cols + `}`, ""},
		{"a row too long", `{"Rows":[["BHP",1,2]],` + cols + `}`, ""},
		{"a nested value", `{"Rows":[["BHP",[1]]],` + cols + `}`, ""},
		{"a row not an array", `{"Rows":[{"Code":"BHP"}],` + cols + `}`, ""},
		{"two objects", `{"Rows":[],` + cols + `}{}`, ""},
		{"cut short", `{"Rows":[["BHP",1]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := &upstream{}
			up.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, tt.answer)
			}))
			t.Cleanup(up.srv.Close)
			srv := service(t, up, 5*time.Second)
			status, body := post(t, srv, "/query", iqlType, "select Code, LastPrice from Security")
			switch {
			case tt.want != "" && (status != http.StatusOK || body != tt.want):
				t.Errorf("%d %s\nwant 200 %s", status, body, tt.want)
			case tt.want == "" && status != http.StatusBadGateway:
				t.Errorf("%d %s, want 502", status, body)
			}
		})
	}
}

// TestMaxConns: the statements in flight to the upstream at once are at
// most MaxConns, whoever sends them; the others wait for a connection and
// are answered.
func TestMaxConns(t *testing.T) {
	var now, most atomic.Int32
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		now.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Rows":[],"Columns":{"Code":{"Index":0}}}`)
	})
	srv := serviceOver(t, up, func(c *iqengine.Config) { c.MaxConns = 2; c.Timeout = 5 * time.Second }, nil)
	var wg sync.WaitGroup
	statuses := make([]int, 12)
	for i := range statuses {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader("select Code from Security"))
			req.Header.Set("Authorization", "Bearer user"+strconv.Itoa(i)) // a user each: the per-user bound is not the one tested
			req.Header.Set("Content-Type", iqlType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK {
			t.Errorf("request %d: %d", i, st)
		}
	}
	if m := most.Load(); m != 2 {
		t.Errorf("%d statements in flight to the upstream at once, want 2 (max_conns)", m)
	}
}

// hostile is an upstream whose answer is a function of the request.
func hostile(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// serviceOver is the query handler over the iq engine in front of up.
func serviceOver(t *testing.T, up *httptest.Server, ecfg func(*iqengine.Config), hcfg func(*queryproxy.Config)) *httptest.Server {
	t.Helper()
	cfg := iqengine.Config{URL: up.URL, Catalog: catalog, Timeout: 2 * time.Second}
	if ecfg != nil {
		ecfg(&cfg)
	}
	eng, err := iqengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	qc := queryproxy.Config{Forwarder: eng, Tables: tables, MaxRows: 3,
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			scopes := []string{"Service/Market", "Service/Trading", "Service/OrderPad"}
			if tok == "market-only" {
				scopes = []string{"Service/Market"}
			}
			return &queryproxy.Caller{Subject: "u-" + tok, ClientID: "app", Token: tok, Scopes: scopes}, true
		}}
	if hcfg != nil {
		hcfg(&qc)
	}
	h, err := queryproxy.New(qc)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// selectWithTrailer POSTs stmt and returns the status, the trailer
// queryproxy.ErrorTrailer and the body read whole.
func selectWithTrailer(t *testing.T, srv *httptest.Server, stmt string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader(stmt))
	req.Header.Set("Authorization", "Bearer tok-123")
	req.Header.Set("Content-Type", iqlType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Trailer.Get(queryproxy.ErrorTrailer), body
}

func answerWith(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}
}
