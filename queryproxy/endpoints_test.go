package queryproxy_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

func TestResultShape(t *testing.T) {
	s := newService(t, nil)
	r := s.query(t, "demo", `select Code, LastPrice, Volume, Updated from Security where Code = 'BHP' and Exchange = 'ASX'`)
	want := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"},"Volume":{"Index":2,"Type":"Integer"},"Updated":{"Index":3,"Type":"DateTime"}},"Rows":[["BHP",37.48,8734512,"2026-11-21T10:30:00Z"]]}`
	if r.status != 200 || r.body != want || r.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %s\n%s", r.status, r.header.Get("Content-Type"), r.body)
	}
	// A price never gains digits: '152.3000' was stored as 152.3.
	r = s.query(t, "demo", `select LastPrice from Security where Code = 'CBA'`)
	if !strings.Contains(r.body, `[[152.3]]`) {
		t.Fatalf("%s", r.body)
	}
	// Keywords are contextual: the table Order, ORDER BY and LIMIT.
	r = s.query(t, "trader", `select OrderId from Order order by Price desc limit 2`)
	if r.status != 200 || strings.Join(r.column(t, "OrderId"), ",") != "5,3" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestStructuredEndpoints(t *testing.T) {
	s := newService(t, nil)
	r := s.do(t, "demo", "POST", "/QUERY/security/SELECT?columns=code,lastprice&column=Exchange", appJSON,
		`[{"ColumnName":"code","Operator":"IN","Value":["BHP","CBA"]},{"columnname":"LastPrice","operator":"<","value":100}]`)
	if r.status != 200 || r.body != `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"},"Exchange":{"Index":2,"Type":"String"}},"Rows":[["BHP",37.48,"ASX"],["BHP",49.12,"NYSE"]]}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = s.do(t, "demo", "POST", "/query/News/select", "", "")
	if r.status != 200 || len(r.result.Rows) == 0 {
		t.Fatalf("no criteria, no body: %d %s", r.status, r.body)
	}
	r = s.do(t, "demo", "POST", "/query/Security/select", appJSON, `[{"ColumnName":"LastPrice","Operator":"BETWEEN","Value":[30,32]},{"ColumnName":"Name","Operator":"LIKE","Value":"W*"}]`)
	if got := r.column(t, "Code"); len(got) != 2 {
		t.Fatalf("BETWEEN and LIKE: %v", got)
	}

	// Insert: one object, then an array in one transaction.
	r = s.do(t, "trader", "POST", "/query/order/insert", appJSON,
		`{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":25,"Price":72.1}`)
	if r.status != 200 || r.body != "{\"RowsAffected\":1}\n" {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	r = s.do(t, "trader", "POST", "/query/Order/Insert", appJSON,
		`[{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1},{"accountid":"TRD-200001","code":"CBA","exchange":"ASX","side":"Sell","quantity":2}]`)
	if r.status != 200 || r.body != "{\"RowsAffected\":2}\n" {
		t.Fatalf("insert of 2: %d %s", r.status, r.body)
	}
	// The third row breaks a constraint: nothing of the batch is written.
	before := len(s.query(t, "trader", `select OrderId from Order`).result.Rows)
	r = s.do(t, "trader", "POST", "/query/Order/insert", appJSON,
		`[{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1},{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":0}]`)
	if r.status != http.StatusConflict || r.result.Error.Code != "constraint_violation" {
		t.Fatalf("constraint: %d %s", r.status, r.body)
	}
	if after := len(s.query(t, "trader", `select OrderId from Order`).result.Rows); after != before {
		t.Fatalf("a failed batch wrote %d rows", after-before)
	}
	// The owner is filled in from the token; the caller's own value is
	// accepted, another user's is refused.
	own := s.do(t, "trader", "POST", "/query/Order/insert", appJSON,
		`{"Owner":"a3e8b7d4-2c6f-4e91-b5d0-7f1a9c3e6b28","AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":3}`)
	other := s.do(t, "trader", "POST", "/query/Order/insert", appJSON,
		`{"Owner":"5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10","AccountId":"DEMO-100001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":3}`)
	if own.status != 200 || other.status != http.StatusForbidden {
		t.Fatalf("own owner: %d %s; another owner: %d %s", own.status, own.body, other.status, other.body)
	}
	// IQL writes: UPDATE and DELETE with the owner filter.
	r = s.query(t, "trader", `update Order set Status = 'Cancelled' where Status = 'Working'`)
	if r.status != 200 || r.body != "{\"RowsAffected\":6}\n" { // 2 seeded + 4 inserted; the demo user's are not touched
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	r = s.query(t, "trader", `update Order set Owner = 'x' where OrderId = 3`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("SET of the owner column: %d %s", r.status, r.body)
	}
	r = s.query(t, "trader", `delete from Order where OrderId = 1`) // the demo user's
	if r.status != 200 || r.body != "{\"RowsAffected\":0}\n" {
		t.Fatalf("delete of another user's row: %d %s", r.status, r.body)
	}
	r = s.query(t, "trader", `delete from Order`)
	if r.status != http.StatusBadRequest || r.result.Error.Code != "syntax_error" {
		t.Fatalf("DELETE without WHERE: %d %s", r.status, r.body)
	}
}

// TestPerUserRows: reads see only the caller's rows, with an OR in the
// caller's predicate too; hidden columns do not exist.
func TestPerUserRows(t *testing.T) {
	s := newService(t, nil)
	for _, stmt := range []string{
		`select OrderId from Order`,
		`select OrderId from Order where OrderId = 1 or OrderId = 2 or 1 = 1`,
		`select OrderId from Order where Owner = '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10' or Status = 'Filled'`,
		`select OrderId from Order where not (OrderId > 2)`,
	} {
		r := s.query(t, "trader", stmt)
		if r.status == http.StatusBadRequest {
			continue // "1 = 1" is not a column comparison
		}
		for _, id := range r.column(t, "OrderId") {
			if id == "1" || id == "2" {
				t.Fatalf("%s: the trader sees the demo user's order %s", stmt, id)
			}
		}
	}
	r := s.do(t, "trader", "POST", "/query/Order/select", appJSON, `[{"ColumnName":"OrderId","Operator":"<","Value":3}]`)
	if r.status != 200 || len(r.result.Rows) != 0 {
		t.Fatalf("structured: %d %s", r.status, r.body)
	}
	r = s.query(t, "trader", `select * from Account`)
	if _, ok := r.result.Columns["InternalRef"]; ok || len(r.result.Rows) != 2 {
		t.Fatalf("select *: %s", r.body)
	}
	for _, stmt := range []string{
		`select InternalRef from Account`,
		`select AccountId from Account where InternalRef BEGINS 'CRM'`,
		`select AccountId from Account order by InternalRef`,
		`update Order set RoutingNote = 'x' where OrderId = 3`,
	} {
		if r := s.query(t, "trader", stmt); r.status != http.StatusNotFound || r.result.Error.Code != "unknown_column" {
			t.Fatalf("%s: %d %s", stmt, r.status, r.body)
		}
	}
}

func TestErrors(t *testing.T) {
	s := newService(t, func(c *queryproxy.Config) { c.MaxBodyBytes = 4096; c.MaxRows = 5 })
	big := strings.Repeat("x", 5000)
	tests := []struct {
		name, token, path, ct, body string
		status                      int
		code                        string
	}{
		{"syntax error with position", "demo", "/query", textPlain, "select * form Security", 400, "syntax_error"},
		{"stacked statements", "demo", "/query", textPlain, "select * from Security; delete from Order where 1=1", 400, "syntax_error"},
		{"comment", "demo", "/query", textPlain, "select * from Security -- x", 400, "syntax_error"},
		{"no token", "", "/query", textPlain, "select * from Security", 401, ""},
		{"bad token", "forged", "/query", textPlain, "select * from Security", 401, ""},
		{"scope missing", "demo", "/query", textPlain, "select * from Account", 403, "forbidden"},
		{"write refused", "viewer", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1}`, 403, "forbidden"},
		{"read-only table", "trader", "/query", textPlain, "delete from Security where Code = 'BHP'", 403, "forbidden"},
		{"unknown table", "demo", "/query", textPlain, "select * from Nope", 404, "unknown_table"},
		{"table not in the policy", "trader", "/query", textPlain, "select * from sqlite_schema", 404, "unknown_table"},
		{"unknown column", "demo", "/query", textPlain, "select Nope from Security", 404, "unknown_column"},
		{"constraint", "trader", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Hold","Quantity":1}`, 409, "constraint_violation"},
		{"body too large", "demo", "/query", textPlain, "select * from Security where Name = '" + big + "'", 413, "too_large"},
		{"wrong content type", "demo", "/query", appJSON, "select * from Security", 415, "unsupported_media_type"},
		{"wrong content type (select)", "demo", "/query/Security/select", textPlain, "[]", 415, "unsupported_media_type"},
		{"result over the row limit", "demo", "/query", textPlain, "select * from Security", 422, "result_too_large"},
		{"unknown endpoint", "demo", "/query/Security/delete", appJSON, "{}", 404, "not_found"},
		{"bad criteria", "demo", "/query/Security/select", appJSON, `[{"ColumnName":"Code","Operator":"EXEC","Value":"x"}]`, 400, "invalid_request"},
		{"criteria object value", "demo", "/query/Security/select", appJSON, `[{"ColumnName":"Code","Operator":"=","Value":{"a":1}}]`, 400, "invalid_request"},
		{"duplicate insert column", "trader", "/query/Order/insert", appJSON, `{"Code":"WES","code":"CBA"}`, 400, "invalid_request"},
		{"LIKE on a number", "demo", "/query", textPlain, "select * from Security where Volume LIKE '1*'", 400, "invalid_statement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(t, tt.token, "POST", tt.path, tt.ct, tt.body, "Request-Id", "|11958d43-4bb87d2798df4c8c.1.")
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.code == "" {
				if r.header.Get("WWW-Authenticate") == "" {
					t.Fatal("no challenge")
				}
				return
			}
			if r.result.Error == nil || r.result.Error.Code != tt.code || r.result.Error.RequestId != "|11958d43-4bb87d2798df4c8c.1." ||
				r.header.Get("Request-Id") != "|11958d43-4bb87d2798df4c8c.1." {
				t.Fatalf("body %s, Request-Id %q", r.body, r.header.Get("Request-Id"))
			}
			if m := r.result.Error.Message; strings.Contains(m, "SQL") || strings.Contains(m, `SELECT "`) || strings.Contains(m, "constraint failed") {
				t.Fatalf("internal detail in %q", r.result.Error.Message)
			}
		})
	}
	if r := s.query(t, "demo", "select * form Security"); !strings.Contains(r.result.Error.Message, "line 1, column 10") {
		t.Fatalf("no position: %s", r.body)
	}
	if r := s.do(t, "demo", "GET", "/query", "", ""); r.status != 405 || r.header.Get("Allow") != "POST, OPTIONS" {
		t.Fatalf("GET: %d %v", r.status, r.header)
	}
	if r := s.do(t, "demo", "POST", "/query", textPlain, "select * from News", "Request-Id", strings.Repeat("x", 129)); r.status != 400 {
		t.Fatalf("long Request-Id: %d", r.status)
	}
	r := s.do(t, "demo", "POST", "/query", textPlain, "select Code from Market")
	if id := r.header.Get("Request-Id"); len(id) != 32 || r.status != 200 {
		t.Fatalf("generated Request-Id %q (%d)", id, r.status)
	}
}

func TestCatalogueTable(t *testing.T) {
	s := newService(t, nil)
	for token, want := range map[string]string{
		"demo":   "CatalogueTable,Market,News,NewsSources,Security",
		"viewer": "Account,CatalogueTable,Order",
	} {
		r := s.query(t, token, "select * from CatalogueTable order by Name")
		if r.status != 200 || strings.Join(r.column(t, "Name"), ",") != want {
			t.Fatalf("%s: %d %s", token, r.status, r.body)
		}
		if r.result.Columns["IsSystem"].Type != "Boolean" {
			t.Fatalf("%s", r.body)
		}
	}
	r := s.query(t, "demo", "select Name from cataloguetable where IsSystem = true")
	if r.status != 200 || r.body != `{"Columns":{"Name":{"Index":0,"Type":"String"}},"Rows":[["CatalogueTable"]]}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := s.query(t, "trader", "delete from CatalogueTable where Name = 'News'"); r.status != 404 {
		t.Fatalf("a write of the catalogue: %d %s", r.status, r.body)
	}
}

func TestCORS(t *testing.T) {
	s := newService(t, nil)
	req, _ := http.NewRequest(http.MethodOptions, s.srv.URL+"/query/Security/select", nil)
	req.Header.Set("Origin", "http://localhost:8080")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, request-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "http://localhost:8080" ||
		!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") || h.Get("Access-Control-Allow-Methods") != "POST" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	req.Header.Set("Origin", "http://evil.example")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("an unknown origin is allowed")
	}
	r := s.do(t, "demo", "POST", "/query", textPlain, "select Code from Market", "Origin", "http://localhost:8080")
	if r.header.Get("Access-Control-Allow-Origin") != "http://localhost:8080" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Request-Id") {
		t.Fatalf("%v", r.header)
	}
}

// TestWriteAudit: every write, refused or done, leaves an audit entry
// with who, table, kind and count, and no value.
func TestWriteAudit(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	s := newService(t, func(c *queryproxy.Config) { c.Logger = zap.New(core) })
	s.do(t, "trader", "POST", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":7,"RoutingNote2":1}`)
	s.do(t, "trader", "POST", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":7}`)
	s.query(t, "trader", `update Order set Status = 'Held' where Code = 'WES'`)
	s.do(t, "trader", "POST", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"ZZZ-SECRET","Exchange":"ASX","Side":"Buy","Quantity":7}`)
	entries := logs.FilterMessage("query write").All()
	if len(entries) != 3 { // the first insert names an unknown column: no write was tried
		t.Fatalf("%d audit entries", len(entries))
	}
	want := []struct{ kind, outcome string }{{"insert", "ok"}, {"update", "ok"}, {"insert", "constraint_violation"}}
	for i, e := range entries {
		f := e.ContextMap()
		if f["kind"] != want[i].kind || f["outcome"] != want[i].outcome || f["table"] != "Order" || f["user"] != querydb.TraderSubject || f["request_id"] == "" {
			t.Errorf("entry %d: %v", i, f)
		}
	}
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && (strings.Contains(s, "ZZZ-SECRET") || strings.Contains(s, "Held")) {
				t.Errorf("log %q field %s holds a value: %q", e.Message, k, s)
			}
		}
	}
}

// TestInsertRowOfTooManyColumns: a structured insert row is refused as
// soon as it names one column more than MaxColumns, before the rest of the
// body is read: the check for names named twice is quadratic, so a 1 MiB
// object of some 87,000 short names, sent by any signed-in caller in
// parallel, took about 20 s of CPU each to refuse. Here the member after
// the bound is malformed: reading on would answer "malformed JSON".
func TestInsertRowOfTooManyColumns(t *testing.T) {
	s := serviceWithTables(t, sqliteengine.Config{}, "", nil, nil)
	var b strings.Builder
	b.WriteByte('{')
	for i := range iql.DefaultMaxColumns + 1 {
		fmt.Fprintf(&b, `"c%06d":0,`, i)
	}
	b.WriteString(`"broken":}`)
	st, body, _ := timedPost(t, s.srv.URL+"/query/NoSuchTable/insert", "attacker1", appJSON, b.String(), 10*time.Second)
	if st != http.StatusRequestEntityTooLarge || !strings.Contains(body, fmt.Sprintf("more than %d columns", iql.DefaultMaxColumns)) {
		t.Fatalf("status %d, body %s; want 413, more than %d columns", st, body, iql.DefaultMaxColumns)
	}
}
