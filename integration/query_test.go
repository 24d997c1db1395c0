package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The query service through the demo config: /query, /query/{table}/select
// and /query/{table}/insert on the embedded SQLite demo database.

// queryResult is a decoded answer of the query service.
type queryResult struct {
	Columns map[string]struct {
		Index int
		Type  string
	}
	Rows         [][]any
	RowsAffected *int64
	Error        *struct{ Code, Message, RequestId string }
}

// query posts to the query service; token "" sends none.
func (g *Gatehouse) query(t *testing.T, token, path, contentType, body string, hdr ...string) (*http.Response, queryResult, string) {
	t.Helper()
	req := mustRequest(t, http.MethodPost, g.Issuer+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, b := g.Do(t, req)
	var out queryResult
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.UseNumber()
		if err := d.Decode(&out); err != nil {
			t.Fatalf("POST %s: %q: %v", path, b, err)
		}
	}
	return resp, out, string(b)
}

func (r queryResult) column(t *testing.T, name string) []string {
	t.Helper()
	c, ok := r.Columns[name]
	if !ok {
		t.Fatalf("no column %s in %v", name, r.Columns)
	}
	var out []string
	for _, row := range r.Rows {
		out = append(out, toText(row[c.Index]))
	}
	return out
}

func toText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

const iqlType = "text/plain; charset=utf-8"

func TestQueryService(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	demo := g.PasswordGrant(t, "demo", "demo").AccessToken
	trader := g.TradingToken(t).AccessToken // Order and Account need Trading: a second factor

	t.Run("IQL", func(t *testing.T) {
		resp, r, body := g.query(t, demo, "/query", iqlType, `select Code, LastPrice from Security where Code = "BHP" and Exchange = 'ASX'`, "Request-Id", "|11958d43-4bb87d2798df4c8c.1.")
		if resp.StatusCode != 200 || body != `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"}},"Rows":[["BHP",37.48]]}` ||
			resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || resp.Header.Get("Request-Id") != "|11958d43-4bb87d2798df4c8c.1." {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
		for where, want := range map[string]string{
			`Code IN ["ANZ","CBA"]`:                                     "ANZ,CBA",
			`Name LIKE 'W*Limited'`:                                     "WES,WOW",
			`Code BEGINS 'BH' AND Volume > 1000000`:                     "BHP",
			`Name CONTAINS 'CaSe'`:                                      "MXC",
			`LastPrice BETWEEN 30 AND 32`:                               "WBC,WOW",
			`NOT (Exchange = 'ASX') AND (Code = 'BHP' OR Code = 'RIO')`: "", // demo holds ASX:quotes alone
			`LastPrice IS NULL`:                                         "",
		} {
			_, r, body = g.query(t, demo, "/query", iqlType, "select Code from Security where "+where+" order by Code")
			if r.Columns == nil {
				t.Fatalf("%s: %s", where, body)
			}
			if got := strings.Join(r.column(t, "Code"), ","); got != want {
				t.Errorf("%s: %s (%s)", where, got, body)
			}
		}
		// viewer holds no venue; trader holds NZX:quotes too; nobody holds NYSE or LSE.
		viewer := g.PasswordGrant(t, "viewer", "viewer").AccessToken
		if _, r, body = g.query(t, viewer, "/query", iqlType, "select Code from Security"); r.Columns == nil || len(r.Rows) != 0 {
			t.Errorf("viewer's securities: %s", body)
		}
		_, r, body = g.query(t, trader, "/query", iqlType, "select Code from Security where Exchange <> 'ASX' order by Code")
		if r.Columns == nil || strings.Join(r.column(t, "Code"), ",") != "AIR,FPH,MEL,SPK" {
			t.Errorf("trader's securities off ASX: %s", body)
		}
		_, r, _ = g.query(t, trader, "/query", iqlType, "select OrderId from Order order by Price desc limit 2")
		if got := strings.Join(r.column(t, "OrderId"), ","); got != "5,3" {
			t.Errorf("the table Order, ORDER BY, LIMIT: %s", got)
		}
	})

	t.Run("structured select and insert", func(t *testing.T) {
		resp, r, body := g.query(t, demo, "/Query/security/Select?columns=Code,Exchange&column=LastPrice", "application/json",
			`[{"ColumnName":"Code","Operator":"=","Value":"BHP"},{"ColumnName":"LastPrice","Operator":">","Value":30}]`)
		// BHP's NYSE row (49.12) is of a venue demo does not hold.
		if resp.StatusCode != 200 || body != `{"Columns":{"Code":{"Index":0,"Type":"String"},"Exchange":{"Index":1,"Type":"String"},"LastPrice":{"Index":2,"Type":"Decimal"}},"Rows":[["BHP","ASX",37.48]]}` {
			t.Fatalf("select: %d %s", resp.StatusCode, body)
		}
		resp, r, body = g.query(t, trader, "/query/Order/insert", "application/json",
			`{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":25,"Price":72.1}`)
		if resp.StatusCode != 200 || r.RowsAffected == nil || *r.RowsAffected != 1 {
			t.Fatalf("insert: %d %s", resp.StatusCode, body)
		}
		_, r, _ = g.query(t, trader, "/query/Order/select?columns=Code,Price,Owner", "application/json", `[{"ColumnName":"Code","Operator":"=","Value":"WES"}]`)
		if len(r.Rows) != 1 || toText(r.Rows[0][1]) != "72.1" || toText(r.Rows[0][2]) != subjectOf(t, "trader") {
			t.Fatalf("the inserted order: %v", r.Rows)
		}
	})

	t.Run("per-user rows, hidden columns, scopes", func(t *testing.T) {
		for _, stmt := range []string{
			"select OrderId, Owner from Order",
			"select OrderId, Owner from Order where OrderId = 1 or OrderId = 2 or Status = 'Filled'",
		} {
			_, r, body := g.query(t, trader, "/query", iqlType, stmt)
			for _, owner := range r.column(t, "Owner") {
				if owner != subjectOf(t, "trader") {
					t.Fatalf("%s: the trader sees another user's order: %s", stmt, body)
				}
			}
		}
		resp, r, _ := g.query(t, demo, "/query", iqlType, "select * from Order")
		if resp.StatusCode != 403 || r.Error.Code != "forbidden" {
			t.Fatalf("the demo user (no Trading scope) reads Order: %d %v", resp.StatusCode, r.Error)
		}
		resp, r, _ = g.query(t, trader, "/query", iqlType, "select * from Account")
		if _, hidden := r.Columns["InternalRef"]; hidden || resp.StatusCode != 200 || len(r.Rows) != 2 {
			t.Fatalf("select * from Account: %v", r.Columns)
		}
		resp, r, _ = g.query(t, trader, "/query", iqlType, "select AccountId from Account where InternalRef BEGINS 'CRM'")
		if resp.StatusCode != 404 || r.Error.Code != "unknown_column" {
			t.Fatalf("a filter on a hidden column: %d %v", resp.StatusCode, r.Error)
		}
		_, r, _ = g.query(t, demo, "/query", iqlType, "select Name from CatalogueTable order by Name")
		if got := strings.Join(r.column(t, "Name"), ","); got != "CatalogueTable,Market,News,NewsSources,Security" {
			t.Fatalf("the demo user's catalogue: %s", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name, token, path, ct, body string
			status                      int
			code                        string
		}{
			{"syntax", demo, "/query", iqlType, "select * form Security", 400, "syntax_error"},
			{"no token", "", "/query", iqlType, "select * from Security", 401, ""},
			{"scope", demo, "/query/Account/select", "application/json", "[]", 403, "forbidden"},
			{"write refused", trader, "/query", iqlType, "delete from Security where Code = 'BHP'", 403, "forbidden"},
			{"unknown table", demo, "/query", iqlType, "select * from Nope", 404, "unknown_table"},
			{"unknown column", demo, "/query/Security/select?columns=Nope", "application/json", "", 404, "unknown_column"},
			{"constraint", trader, "/query/Order/insert", "application/json", `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Hold","Quantity":1}`, 409, "constraint_violation"},
			{"too large", demo, "/query", iqlType, "select * from Security where Name = '" + strings.Repeat("x", 70<<10) + "'", 413, "too_large"},
			{"content type", demo, "/query/Security/select", "text/plain", "[]", 415, "unsupported_media_type"},
		} {
			resp, r, body := g.query(t, tt.token, tt.path, tt.ct, tt.body)
			if resp.StatusCode != tt.status {
				t.Errorf("%s: %d %s", tt.name, resp.StatusCode, body)
				continue
			}
			if tt.code == "" {
				if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
					t.Errorf("%s: no challenge", tt.name)
				}
			} else if r.Error == nil || r.Error.Code != tt.code || r.Error.RequestId == "" {
				t.Errorf("%s: %s", tt.name, body)
			}
		}
	})

	t.Run("method", func(t *testing.T) {
		req := mustRequest(t, http.MethodGet, g.Issuer+"/query", nil)
		req.Header.Set("Authorization", "Bearer "+demo)
		resp, body := g.Do(t, req)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST, OPTIONS" || !strings.Contains(string(body), `"method_not_allowed"`) {
			t.Fatalf("GET /query: %d %v %s", resp.StatusCode, resp.Header, body)
		}
	})

	t.Run("CORS preflight", func(t *testing.T) {
		req := mustRequest(t, http.MethodOptions, g.Issuer+"/query/Security/select", nil)
		req.Header.Set("Origin", g.Issuer)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, _ := g.Do(t, req)
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != g.Issuer ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
	})

	t.Run("injection", func(t *testing.T) {
		// The statement trace of the demo (trace_statements) logs each SQL
		// text the engine runs: one per request, never a value.
		traced := func() []string {
			var out []string
			for line := range strings.Lines(g.Logs()) {
				if strings.Contains(line, `"query statement"`) {
					var e struct{ SQL string }
					_ = json.Unmarshal([]byte(line), &e)
					out = append(out, e.SQL)
				}
			}
			return out
		}
		values := []string{`BHP'; DELETE FROM "Order"; --`, `' OR '1'='1`, `"Security"."Code"`, `%`, `_`, `*/ OR 1=1 /*`, "BHP\uff07 OR 1=1"}
		for _, v := range values {
			jv, _ := json.Marshal(v)
			q := "'" + strings.ReplaceAll(v, "'", "''") + "'"
			for _, rq := range [][3]string{
				{"/query", iqlType, "select Code from Security where Name = " + q + " or Code IN [" + q + "]"},
				{"/query/Security/select", "application/json", `[{"ColumnName":"Name","Operator":"CONTAINS","Value":` + string(jv) + `}]`},
				{"/query/Order/insert", "application/json", `{"AccountId":"TRD-200001","Code":` + string(jv) + `,"Exchange":"ASX","Side":"Buy","Quantity":1}`},
			} {
				before := len(traced())
				resp, _, body := g.query(t, trader, rq[0], rq[1], rq[2])
				if resp.StatusCode != 200 && resp.StatusCode != 409 {
					t.Fatalf("%s %s: %d %s", rq[0], rq[2], resp.StatusCode, body)
				}
				var ran []string
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if ran = traced()[before:]; len(ran) >= 1 {
						break
					}
				}
				if len(ran) != 1 || strings.Contains(ran[0], v) || strings.Contains(ran[0], ";") || strings.Contains(ran[0], "'") {
					t.Fatalf("%s %s: statements %q", rq[0], rq[2], ran)
				}
			}
		}
		_, r, _ := g.query(t, trader, "/query", iqlType, "select Code from Security where Exchange = 'ASX'")
		if n := len(r.Rows); n < 20 || slices.Contains(r.column(t, "Code"), "") {
			t.Fatalf("the Security table after the injection attempts: %d rows", n)
		}
	})
}
