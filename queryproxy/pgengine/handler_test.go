package pgengine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/enginetest"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestHandlerAgreesWithSQLite sends the same statements to the service over SQLite and
// over PostgreSQL and compares the answers byte for byte: the comparison rules (byte-wise
// ordering, case-sensitive patterns, NULLs last) hold on both. The PostgreSQL database's
// default collation is linguistic where the server has ICU (newDatabase), where "bhp"
// sorts next to "BHP": only the engine's COLLATE "C" makes the orders agree. Decimal
// columns are left out: SQLite returns 37.48 where PostgreSQL keeps 37.4800.
func TestHandlerAgreesWithSQLite(t *testing.T) {
	pg, lite := newService(t, Config{}, nil), newSQLiteService(t)
	const cols = "select Code, Exchange, Name, Currency, Volume, Updated from Security"
	stmts := []string{
		cols + " order by Name",
		cols + " order by Name desc",
		cols + " order by Currency desc, Name",
		cols + " order by Code, Exchange desc",
		cols + " where Name > 'Rio' order by Name",
		cols + " where Name >= 'a' order by Code, Exchange",
		cols + " where Name < 'B' order by Code, Exchange",
		cols + " where Name BETWEEN 'A' AND 'c' order by Name",
		cols + " where Name BETWEEN 'Under' AND 'bhq' order by Name",
		cols + " where Code <= 'BHP' order by Code desc, Exchange",
		cols + " where Name LIKE '*\\*' order by Code",
		cols + " where Name CONTAINS '\\' order by Code",
		cols + " where Name CONTAINS '*' order by Code",
		cols + " where Name LIKE '*[*' order by Code",
		cols + " where Name LIKE '100%*' order by Code",
		cols + " where Updated > '2026-11-21T10:29:59Z' order by Updated, Code, Exchange",
		cols + " order by Volume desc limit 5",
		"select Id, Headline, Codes from News order by Codes, Id",
		"select Id, Headline, Codes from News order by Codes desc, Id",
		"select Id, Codes from News where Codes IS NULL",
		"select Code, Name from NewsSources order by Name desc",
	}
	for _, tt := range enginetest.Operators {
		stmts = append(stmts, cols+" where "+tt.Where+" order by Code, Exchange")
	}
	for _, stmt := range stmts {
		t.Run(stmt, func(t *testing.T) {
			a, b := lite.query(t, "trader", stmt), pg.query(t, "trader", stmt)
			if a.status != 200 || a.body != b.body || b.status != a.status {
				t.Fatalf("SQLite %d:\n%s\nPostgreSQL %d:\n%s", a.status, a.body, b.status, b.body)
			}
		})
	}
}

// TestHandlerExactNumeric: a numeric keeps its exact digits from the database to the JSON
// of the answer, in the shape and column types of the SQLite engine's.
func TestHandlerExactNumeric(t *testing.T) {
	s := newService(t, Config{}, nil)
	r := s.query(t, "demo", `select Code, LastPrice, Volume, Updated from Security where Code = 'BHP' and Exchange = 'ASX'`)
	want := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"},"Volume":{"Index":2,"Type":"Integer"},"Updated":{"Index":3,"Type":"DateTime"}},"Rows":[["BHP",37.4800,8734512,"2026-11-21T10:30:00Z"]]}`
	if r.status != 200 || r.body != want {
		t.Fatalf("%d\n%s\nwant\n%s", r.status, r.body, want)
	}
	for stmt, want := range map[string]string{
		`select LastPrice from Security where Code = 'CBA'`:               `[[152.3000]]`,
		`select LastPrice from Security where LastPrice = 0.0725`:         `[[0.0725]]`,
		`select LastPrice from Security where LastPrice = 49.765`:         `[[49.7650]]`,
		`select Balance from Account where AccountId = 'TRD-200001'`:      `[[150000.75]]`,
		`select Price from Order where OrderId = 3`:                       `[[151.9000]]`,
		`select Price from Order where Price is null`:                     `[[null]]`,
		`select LastPrice from Security where LastPrice > 285.3999999999`: `[[285.4000]]`,
	} {
		if r := s.query(t, "trader", stmt); r.status != 200 || !strings.HasSuffix(r.body, `"Rows":`+want+`}`) {
			t.Errorf("%s: %d %s, want rows %s", stmt, r.status, r.body, want)
		}
	}
	// Written and read back: the digits sent are the digits stored.
	r = s.do(t, "trader", "/query/Order/insert", appJSON,
		`{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":25,"Price":72.1050}`)
	if r.status != 200 {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	if r := s.query(t, "trader", `select OrderId, Price from Order where Code = 'WES'`); !strings.HasSuffix(r.body, `"Rows":[[7,72.1050]]}`) {
		t.Fatalf("read back: %s", r.body)
	}
	// Decoded by a JSON reader that keeps numbers as text, the digits are all there.
	var v struct{ Rows [][]json.Number }
	d := json.NewDecoder(strings.NewReader(s.query(t, "demo", `select LastPrice from Security where Code = 'CBA'`).body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || v.Rows[0][0] != "152.3000" {
		t.Fatalf("%v %v", v, err)
	}
}

// TestHandlerWrites: inserts, a batch that breaks a constraint (409, nothing written),
// updates and deletes under the owner filter.
func TestHandlerWrites(t *testing.T) {
	s := newService(t, Config{}, nil)
	r := s.do(t, "trader", "/query/order/insert", appJSON,
		`{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":25,"Price":72.1}`)
	if r.status != 200 || r.body != "{\"RowsAffected\":1}\n" {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	r = s.do(t, "trader", "/query/Order/Insert", appJSON,
		`[{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1},{"accountid":"TRD-200001","code":"CBA","exchange":"ASX","side":"Sell","quantity":2}]`)
	if r.status != 200 || r.body != "{\"RowsAffected\":2}\n" {
		t.Fatalf("insert of 2: %d %s", r.status, r.body)
	}
	before := len(s.query(t, "trader", `select OrderId from Order`).result.Rows)
	for name, body := range map[string]string{
		"check, second row":       `[{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1},{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":0}]`,
		"check":                   `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Hold","Quantity":1}`,
		"unknown security":        `{"AccountId":"TRD-200001","Code":"ZZZ","Exchange":"ASX","Side":"Buy","Quantity":1}`,
		"another user's account":  `{"AccountId":"DEMO-100001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1}`,
		"primary key":             `{"OrderId":1,"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1}`,
		"not null":                `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy"}`,
		"price check, exact zero": `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1,"Price":0.0000}`,
	} {
		r := s.do(t, "trader", "/query/Order/insert", appJSON, body)
		if r.status != http.StatusConflict || r.result.Error.Code != "constraint_violation" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if after := len(s.query(t, "trader", `select OrderId from Order`).result.Rows); after != before {
		t.Fatalf("failed inserts wrote %d rows", after-before)
	}
	r = s.query(t, "trader", `update Order set Status = 'Cancelled' where Status = 'Working'`)
	if r.status != 200 || r.body != "{\"RowsAffected\":5}\n" { // 2 seeded + 3 inserted; the demo user's are not touched
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	r = s.query(t, "trader", `delete from Order where OrderId = 1`) // the demo user's
	if r.status != 200 || r.body != "{\"RowsAffected\":0}\n" {
		t.Fatalf("delete of another user's row: %d %s", r.status, r.body)
	}
	if r := s.query(t, "demo", `select Code from Security where Code = 'BHP'`); len(r.result.Rows) != 2 {
		t.Fatalf("%s", r.body)
	}
}

// TestHandlerPerUserRows: reads see only the caller's rows, with an OR in the caller's
// predicate too; hidden columns do not exist.
func TestHandlerPerUserRows(t *testing.T) {
	s := newService(t, Config{}, nil)
	for _, stmt := range []string{
		`select OrderId from Order`,
		`select OrderId from Order where OrderId = 1 or OrderId = 2 or OrderId > 0`,
		`select OrderId from Order where Owner = '5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10' or Status = 'Filled'`,
		`select OrderId from Order where not (OrderId > 2)`,
	} {
		r := s.query(t, "trader", stmt)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", stmt, r.status, r.body)
		}
		for _, id := range r.column(t, "OrderId") {
			if id == "1" || id == "2" {
				t.Fatalf("%s: the trader sees the demo user's order %s", stmt, id)
			}
		}
	}
	if r := s.query(t, "trader", `select OrderId from Order order by OrderId`); strings.Join(r.column(t, "OrderId"), ",") != "3,4,5,6" {
		t.Fatalf("%s", r.body)
	}
	r := s.do(t, "trader", "/query/Order/select", appJSON, `[{"ColumnName":"OrderId","Operator":"<","Value":3}]`)
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
		`update Order set RoutingNote = 'x' where OrderId = 3`,
	} {
		if r := s.query(t, "trader", stmt); r.status != http.StatusNotFound || r.result.Error.Code != "unknown_column" {
			t.Fatalf("%s: %d %s", stmt, r.status, r.body)
		}
	}
}

// TestHandlerTimeout: a statement past the time limit is answered 504, and stops on the
// server.
func TestHandlerTimeout(t *testing.T) {
	s := newService(t, Config{StatementTimeout: 300 * time.Millisecond},
		func(c *queryproxy.Config) { c.Tables = append(c.Tables, slowPolicy) })
	start := time.Now()
	r := s.query(t, "demo", `select Name from Slow`)
	if r.status != http.StatusGatewayTimeout || r.result.Error.Code != "timeout" || time.Since(start) > slack {
		t.Fatalf("%d %s after %v", r.status, r.body, time.Since(start))
	}
	waitStopped(t, s.db, `"Slow"`)
}

// TestHandlerClientGone: a client that goes away while its statement runs stops the
// statement on the server, not only in the gateway.
func TestHandlerClientGone(t *testing.T) {
	s := newService(t, Config{StatementTimeout: 30 * time.Second},
		func(c *queryproxy.Config) { c.Tables = append(c.Tables, slowPolicy) })
	a := admin(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/query", strings.NewReader(`select Name from Slow`))
	req.Header.Set("Authorization", "Bearer demo")
	req.Header.Set("Content-Type", textPlain)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Wait until the server runs it, then leave.
	for deadline := time.Now().Add(slack); ; time.Sleep(10 * time.Millisecond) {
		if _, running := backends(t, a, s.db, `"Slow"`); running > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the statement never ran")
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the request was answered, not canceled")
	}
	waitStopped(t, s.db, `"Slow"`)
	if r := s.query(t, "demo", `select Code from Market`); r.status != 200 {
		t.Fatalf("after: %d %s", r.status, r.body)
	}
}

// hostileValues are values that would change a statement were they concatenated into it.
var hostileValues = []string{
	`BHP'; DELETE FROM "Order"; --`, `BHP" OR "1"="1`, `' OR '1'='1`, `'); DROP TABLE "Security"; --`,
	`BHP/*`, `*/ OR 1=1`, `%`, `_`, `*`, `[`, `\`, `\'`, `'$1'`, `$$ OR 1=1 $$`, `E'\x41'`, `::text`,
	"BHP\u02bc OR 1=1", `"Security"."Code"`, `= ANY (SELECT "Owner" FROM "Order")`,
}

// statementShape is what a traced statement may look like: quoted identifiers,
// placeholders, casts and fixed keywords only; no literal text but ESCAPE's.
var statementShape = regexp.MustCompile(`^[A-Za-z0-9_ ,.()"$:=<>*!+\-]*( ESCAPE '\\')?[A-Za-z0-9_ ,.()"$:=<>*!+\-]*$`)

// TestHandlerInjection sends each hostile value through the three endpoints and checks
// that nothing ran but one intended statement per request, the value only ever as a bind
// argument, and that the tables are unchanged.
func TestHandlerInjection(t *testing.T) {
	s := newService(t, Config{}, nil)
	count := func(table string) int {
		return len(s.query(t, "trader", "select * from "+table+" limit 1000").result.Rows)
	}
	securities, orders := count("Security"), count("Order")
	quoted := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	for _, v := range hostileValues {
		jv, _ := json.Marshal(v)
		for _, rq := range []struct{ path, ct, body string }{
			{"/query", textPlain, "select Code from Security where Name = " + quoted(v)},
			{"/query", textPlain, "select Code from Security where Name CONTAINS " + quoted(v)},
			{"/query", textPlain, "select Code from Security where Code IN [" + quoted(v) + ", 'BHP'] order by Name"},
			{"/query/Security/select", appJSON, `[{"ColumnName":"Name","Operator":"LIKE","Value":` + string(jv) + `}]`},
			{"/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":` + string(jv) + `,"Exchange":"ASX","Side":"Buy","Quantity":1}`},
		} {
			s.mu.Lock()
			n := len(s.trace)
			s.mu.Unlock()
			r := s.do(t, "trader", rq.path, rq.ct, rq.body)
			if r.status != 200 && r.status != http.StatusConflict {
				t.Fatalf("%s %s: %d %s", rq.path, rq.body, r.status, r.body)
			}
			if strings.Contains(rq.body, "CONTAINS") && v == "%" && strings.Join(r.column(t, "Code"), ",") != "PCT" {
				t.Fatalf("CONTAINS '%%': %s", r.body)
			}
			s.mu.Lock()
			ran := s.trace[n:]
			s.mu.Unlock()
			// ESCAPE '\' is the one literal sqlgen writes; the value is not in the rest.
			if len(ran) != 1 || strings.Contains(strings.Replace(ran[0], ` ESCAPE '\'`, "", 1), v) || !statementShape.MatchString(ran[0]) {
				t.Fatalf("%s %s: ran %q", rq.path, rq.body, ran)
			}
		}
	}
	if count("Security") != securities || count("Order") != orders {
		t.Fatalf("tables changed: securities %d -> %d, orders %d -> %d", securities, count("Security"), orders, count("Order"))
	}
}

// TestDemoSameData: the PostgreSQL demo script holds the tables, columns and rows of the
// SQLite one, value for value (a Decimal column compared by value: SQLite holds a double).
func TestDemoSameData(t *testing.T) {
	pg, lite := newService(t, Config{}, nil), newSQLiteService(t)
	ctx := context.Background()
	pcat, _ := pg.eng.Catalog(ctx)
	lcat, _ := lite.eng.Catalog(ctx)
	if len(pcat.Tables) != len(lcat.Tables)+1 { // and Slow
		t.Errorf("PostgreSQL tables %v, SQLite tables %v", pcat.Tables, lcat.Tables)
	}
	for _, lt := range lcat.Tables {
		pt, ok := pcat.Table(lt.Name)
		// The numbers a column holds differ by engine (numeric(12,4) here, a double
		// there): names and types compared.
		if !ok || pt.Name != lt.Name || !equal(withoutNum(pt.Columns), withoutNum(lt.Columns)) {
			t.Errorf("table %s: PostgreSQL %v, SQLite %v", lt.Name, pt.Columns, lt.Columns)
			continue
		}
		sql := `SELECT * FROM "` + lt.Name + `"`
		prows, lrows := readAll(t, pg.eng, lt.Columns, sql), readAll(t, lite.eng, lt.Columns, sql)
		if len(prows) != len(lrows) || len(lrows) == 0 {
			t.Errorf("%s: %d rows on PostgreSQL, %d on SQLite", lt.Name, len(prows), len(lrows))
			continue
		}
		for i := range lrows {
			for j := range lrows[i] {
				if !equal(prows[i][j], lrows[i][j]) {
					t.Errorf("%s row %d, %s: PostgreSQL %#v, SQLite %#v", lt.Name, i, lt.Columns[j].Name, prows[i][j], lrows[i][j])
				}
			}
		}
	}
}

// readAll reads a query's rows through any engine, a Decimal column's values as float64,
// sorted by their printed form.
func readAll(t *testing.T, e engine.Engine, cols []sqlgen.Column, sql string) [][]any {
	t.Helper()
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all [][]any
	for rows.Next() {
		row := append([]any(nil), rows.Values()...)
		for i, c := range cols {
			if c.Type != sqlgen.Decimal {
				continue
			}
			switch v := row[i].(type) {
			case engine.Decimal:
				f, err := strconv.ParseFloat(string(v), 64)
				if err != nil {
					t.Fatal(err)
				}
				row[i] = f
			case int64:
				row[i] = float64(v)
			}
		}
		all = append(all, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b []any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return all
}

// TestHandlerInvalidValue: a value the column's type refuses is the
// client's error (400), not the server's.
func TestHandlerInvalidValue(t *testing.T) {
	s := newService(t, Config{}, nil)
	for _, stmt := range []string{
		`select Code from Security where Volume = 'abc'`,
		`select Code from Security where Updated > 'not a date'`,
	} {
		r := s.query(t, "demo", stmt)
		if r.status != http.StatusBadRequest || r.result.Error.Code != "invalid_statement" || strings.Contains(r.body, "abc") {
			t.Fatalf("%s: %d %s", stmt, r.status, r.body)
		}
	}
}

// withoutNum is cols with Num cleared.
func withoutNum(cols []sqlgen.Column) []sqlgen.Column {
	out := slices.Clone(cols)
	for i := range out {
		out[i].Num = sqlgen.Numeric{}
	}
	return out
}

// TestHandlerNumbersAColumnCannotHold: a number a column cannot hold is refused with 400
// naming the column, in a structured insert, an IQL insert and a filter, on SQLite and
// PostgreSQL alike; an integral value in any spelling is taken as the integer it is; and
// nothing is stored.
// It failed when: on SQLite, Quantity 1e999 was stored (as infinity, past CHECK
// (Quantity > 0)) and read back as null from a NOT NULL column, and Price 1e400 and a
// 401-digit literal likewise; on PostgreSQL a number too large for an integer column
// was a 500 internal_error (pgx refused to encode it).
func TestHandlerNumbersAColumnCannotHold(t *testing.T) {
	order := func(q string) string {
		return `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy",` + q + `}`
	}
	big := strings.Repeat("9", 401)
	for name, s := range map[string]*testService{"PostgreSQL": newService(t, Config{}, nil), "SQLite": newSQLiteService(t)} {
		t.Run(name, func(t *testing.T) {
			before := len(s.query(t, "trader", `select OrderId from Order`).result.Rows)
			for _, tt := range []struct{ what, path, ct, body, column string }{
				{"Quantity 1e999", "/query/Order/insert", appJSON, order(`"Quantity":1e999`), "Quantity"},
				{"Quantity past int64", "/query/Order/insert", appJSON, order(`"Quantity":9223372036854775808`), "Quantity"},
				{"a fraction of a Quantity", "/query/Order/insert", appJSON, order(`"Quantity":1.5`), "Quantity"},
				{"Price 1e400 on SQLite, 1e9 past numeric(12,4)", "/query/Order/insert", appJSON,
					order(`"Quantity":1,"Price":` + map[string]string{"SQLite": "1e400", "PostgreSQL": "1e9"}[name]), "Price"},
				{"IQL: a 401-digit literal", "/query", textPlain,
					`insert into Order (AccountId, Code, Exchange, Side, Quantity, Price) values ('TRD-200001', 'WES', 'ASX', 'Buy', 1, ` + big + `)`, "Price"},
				{"a filter past int64", "/query", textPlain, `select OrderId from Order where Quantity > 100000000000000000000000000000`, "Quantity"},
				{"a filter with a fraction", "/query", textPlain, `select OrderId from Order where Quantity = 2.5`, "Quantity"},
			} {
				r := s.do(t, "trader", tt.path, tt.ct, tt.body)
				if r.status != http.StatusBadRequest || r.result.Error == nil || r.result.Error.Code != "invalid_statement" ||
					!strings.Contains(r.result.Error.Message, `"`+tt.column+`"`) {
					t.Errorf("%s: %d %.300s", tt.what, r.status, r.body)
				}
			}
			if after := len(s.query(t, "trader", `select OrderId from Order`).result.Rows); after != before {
				t.Fatalf("refused inserts wrote %d rows", after-before)
			}
			// 1.0 and 1e1 are integers.
			r := s.do(t, "trader", "/query/Order/insert", appJSON, order(`"Quantity":1e1,"Price":2.5`))
			if r.status != 200 {
				t.Fatalf("Quantity 1e1: %d %s", r.status, r.body)
			}
			r = s.query(t, "trader", `select Quantity from Order where Quantity = 10.0`)
			if r.status != 200 || len(r.result.Rows) == 0 || fmt.Sprint(r.result.Rows[len(r.result.Rows)-1][0]) != "10" {
				t.Fatalf("Quantity = 10.0: %d %s", r.status, r.body)
			}
		})
	}
}

// TestNumericTypesOnPostgreSQL: each numeric type takes what it holds and refuses the
// rest with 400: smallint and integer their range, real and double precision a finite
// value, numeric(5,2) three digits before the point once rounded, an unconstrained
// numeric 1e400 exactly.
func TestNumericTypesOnPostgreSQL(t *testing.T) {
	dsn, name := newDatabase(t, `CREATE TABLE "Nums" ("Id" serial PRIMARY KEY, "S" smallint, "I" integer, "B" bigint,
		"R" real, "D" double precision, "P" numeric(5,2), "N" numeric);`)
	s := &testService{db: name}
	s.eng = openEngine(t, Config{DSN: dsn})
	s.serve(t, func(c *queryproxy.Config) {
		c.Tables = []queryproxy.TablePolicy{{Table: "Nums", Read: []string{"Service/Market"}, Write: []string{"Service/Market"}}}
	})
	for _, tt := range []struct {
		col, value string
		ok         bool
	}{
		{"S", "32767", true}, {"S", "32768", false}, {"S", "-32768", true}, {"S", "-32769", false},
		{"I", "2147483647", true}, {"I", "2147483648", false}, {"I", "2.147483647e9", true},
		{"B", "9223372036854775807", true}, {"B", "9223372036854775808", false},
		{"R", "3.4e38", true}, {"R", "3.5e38", false}, {"D", "1.7e308", true}, {"D", "1e309", false},
		{"P", "999.99", true}, {"P", "999.994", true}, {"P", "999.995", false}, {"P", "1000", false}, {"P", "-999.99", true},
		{"N", "1e400", true},
	} {
		r := s.do(t, "demo", "/query/Nums/insert", appJSON, `{"`+tt.col+`":`+tt.value+`}`)
		if ok := r.status == 200; ok != tt.ok || !ok && (r.status != http.StatusBadRequest || !strings.Contains(r.body, `\"`+tt.col+`\"`)) {
			t.Errorf("%s = %s: %d %s, want accepted %v (or 400 naming the column)", tt.col, tt.value, r.status, r.body, tt.ok)
		}
		if strings.Contains(tt.value, "e") {
			continue // IQL has no exponent
		}
		f := s.query(t, "demo", `select Id from Nums where `+tt.col+` = `+tt.value)
		if ok := f.status == 200; ok != tt.ok {
			t.Errorf("filter %s = %s: %d %s", tt.col, tt.value, f.status, f.body)
		}
	}
	r := s.query(t, "demo", `select N from Nums where N > 1`)
	if len(r.result.Rows) != 1 || !strings.HasPrefix(fmt.Sprint(r.result.Rows[0][0]), "1000000000") {
		t.Errorf("numeric 1e400 read back: %.200s", r.body)
	}
}

// TestNondeterministicCollation: on a column whose collation is nondeterministic (ICU,
// ignoring case), "=", "<>", IN and the owner filter still compare byte for byte: the
// trader does not see the rows of the upper-case spelling of his subject, and a value
// finds only its own spelling.
// It failed when: the comparisons followed the column's collation: the trader read the
// rows of "TRADER…", and Body = 'TRADER NOTE' found 'trader note'.
func TestNondeterministicCollation(t *testing.T) {
	upper := strings.ToUpper(querydb.TraderSubject)
	dsn, name := newDatabase(t, `CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
		CREATE TABLE "Notes" ("Id" serial PRIMARY KEY, "Owner" text COLLATE ci NOT NULL, "Body" text COLLATE ci);
		INSERT INTO "Notes" ("Owner", "Body") VALUES ('`+querydb.TraderSubject+`', 'trader note'),
			('`+upper+`', 'TRADER NOTE'), ('`+upper+`', 'someone else''s');`)
	s := &testService{db: name}
	s.eng = openEngine(t, Config{DSN: dsn})
	s.serve(t, func(c *queryproxy.Config) {
		c.Tables = []queryproxy.TablePolicy{{Table: "Notes", Read: []string{"Service/Trading"}, Owner: "Owner"}}
	})
	for stmt, want := range map[string]int{
		`select Body from Notes`:                                    1,
		`select Body from Notes where Body = 'trader note'`:         1,
		`select Body from Notes where Body = 'TRADER NOTE'`:         0,
		`select Body from Notes where Body <> 'TRADER NOTE'`:        1,
		`select Body from Notes where Body in ['TRADER NOTE', 'x']`: 0,
	} {
		r := s.query(t, "trader", stmt)
		if r.status != 200 || len(r.result.Rows) != want {
			t.Errorf("%s: %d rows, want %d: %s", stmt, len(r.result.Rows), want, r.body)
		}
	}
}

// TestSchemaChangeUnderTheGateway: a migration that changes a column's type while the
// engine runs costs no error: a statement prepared before it is prepared again, and the
// catalog read again (the new type shows in the result's Columns).
// It failed when: each pooled connection answered one 500 per statement it had
// prepared ("cached plan must not change result type") until a restart.
func TestSchemaChangeUnderTheGateway(t *testing.T) {
	dsn, name := newDatabase(t, `CREATE TABLE "T" ("A" integer, "B" text); INSERT INTO "T" VALUES (1, 'x');`)
	s := &testService{db: name}
	s.eng = openEngine(t, Config{DSN: dsn, MaxConns: 2})
	s.serve(t, func(c *queryproxy.Config) {
		c.Tables = []queryproxy.TablePolicy{{Table: "T", Read: []string{"Service/Market"}}}
	})
	for range 4 { // each connection prepares it
		if r := s.query(t, "demo", `select * from T`); r.status != 200 {
			t.Fatalf("before: %d %s", r.status, r.body)
		}
	}
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), `ALTER TABLE "T" ALTER COLUMN "B" TYPE integer USING 7`); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		r := s.query(t, "demo", `select * from T`)
		if r.status != 200 {
			t.Fatalf("query %d after the migration: %d %s", i, r.status, r.body)
		}
		if i == 3 && (r.result.Columns["B"].Type != "Integer" || fmt.Sprint(r.result.Rows[0][1]) != "7") {
			t.Errorf("after the migration: %s", r.body)
		}
	}
}
