package querydb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/examples/marketdata"
	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

func open(t *testing.T) *sqliteengine.Engine {
	t.Helper()
	e, err := sqliteengine.Open(context.Background(), sqliteengine.Config{
		Path: filepath.Join(t.TempDir(), "query.db"),
		Init: querydb.SQL,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func query(t *testing.T, e *sqliteengine.Engine, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := e.Query(context.Background(), sqlgen.Statement{SQL: sql, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all [][]any
	for rows.Next() {
		all = append(all, append([]any(nil), rows.Values()...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

func TestQueries(t *testing.T) {
	e := open(t)
	tests := []struct {
		name string
		sql  string
		args []any
		want string // rows, as fmt prints them
	}{
		{"BHP on ASX", `SELECT "Code", "LastPrice", "Currency" FROM "Security" WHERE "Code" = ? AND "Exchange" = ?`,
			[]any{"BHP", "ASX"}, `[[BHP 37.48 AUD]]`},
		{"decimal text stored as a number", `SELECT "LastPrice" FROM "Security" WHERE "Code" = 'CBA'`, nil, `[[152.3]]`},
		{"BHP on every market", `SELECT "Exchange" FROM "Security" WHERE "Code" = ? ORDER BY 1`, []any{"BHP"}, `[[ASX] [NYSE]]`},
		{"enough securities", `SELECT count(*) >= 20 FROM "Security" WHERE "Exchange" = 'ASX'`, nil, `[[1]]`},
		{"escaped percent", `SELECT "Code" FROM "Security" WHERE "Name" LIKE ? ESCAPE '\'`, []any{`%\%%`}, `[[PCT]]`},
		{"escaped underscore", `SELECT "Code" FROM "Security" WHERE "Name" LIKE ? ESCAPE '\'`, []any{`%\_%`}, `[[USC]]`},
		{"quote", `SELECT "Code" FROM "Security" WHERE instr("Name", ?) > 0`, []any{`'`}, `[[OBR]]`},
		{"double quote", `SELECT "Code" FROM "Security" WHERE instr("Name", ?) > 0`, []any{`"`}, `[[QTE]]`},
		{"case-sensitive begins", `SELECT "Code" FROM "Security" WHERE substr("Name", 1, 3) = ?`, []any{"bhp"}, `[[BHPX]]`},
		{"news about BHP", `SELECT "Id" FROM "News" WHERE instr(',' || "Codes" || ',', ?) > 0 ORDER BY 1`, []any{",BHP,"}, `[[1] [2]]`},
		{"demo's orders", `SELECT "OrderId" FROM "Order" WHERE "Owner" = ? ORDER BY 1`, []any{querydb.DemoSubject}, `[[1] [2]]`},
		{"trader's accounts", `SELECT "AccountId", "Balance" FROM "Account" WHERE "Owner" = ? ORDER BY 1`,
			[]any{querydb.TraderSubject}, `[[TRD-200001 150000.75] [TRD-200002 40000.5]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(query(t, e, tt.sql, tt.args...)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestResultJSON runs a query through the result writer: the shape docs/design.md shows.
func TestResultJSON(t *testing.T) {
	e := open(t)
	rows, err := e.Query(context.Background(), sqlgen.Statement{
		SQL:  `SELECT "Code", "LastPrice", "Updated" FROM "Security" WHERE "Code" = ? AND "Exchange" = ?`,
		Args: []any{"BHP", "ASX"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rec := httptest.NewRecorder()
	if _, err := queryproxy.WriteResult(rec, rows, queryproxy.ResultOptions{MaxRows: 100}); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rec.Result().Body)
	want := `{"Columns":{"Code":{"Index":0,"Type":"String"},"LastPrice":{"Index":1,"Type":"Decimal"},` +
		`"Updated":{"Index":2,"Type":"DateTime"}},"Rows":[["BHP",37.48,"2026-11-21T10:30:00Z"]]}`
	if string(body) != want {
		t.Fatalf("body\n%s\nwant\n%s", body, want)
	}
}

func TestOrders(t *testing.T) {
	e := open(t)
	insert := `INSERT INTO "Order" ("Owner", "AccountId", "Code", "Exchange", "Side", "Quantity", "Price") VALUES (?, ?, ?, ?, ?, ?, ?)`
	n, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: insert,
		Args: []any{querydb.TraderSubject, "TRD-200001", "WES", "ASX", "Buy", int64(25), engine.Decimal("72.10")}}})
	if err != nil || n != 1 {
		t.Fatalf("Exec = %d, %v", n, err)
	}
	got := fmt.Sprint(query(t, e, `SELECT "OrderId", "Price", "Status", length("Created") FROM "Order" WHERE "Code" = 'WES'`))
	if got != `[[7 72.1 Working 20]]` {
		t.Fatalf("new order %s", got)
	}

	refused := map[string][]any{
		"another user's account": {querydb.DemoSubject, "TRD-200001", "WES", "ASX", "Buy", int64(1), nil},
		"unknown security":       {querydb.TraderSubject, "TRD-200001", "ZZZ", "ASX", "Buy", int64(1), nil},
		"bad side":               {querydb.TraderSubject, "TRD-200001", "WES", "ASX", "Hold", int64(1), nil},
		"zero quantity":          {querydb.TraderSubject, "TRD-200001", "WES", "ASX", "Sell", int64(0), nil},
		"no owner":               {nil, "TRD-200001", "WES", "ASX", "Sell", int64(1), nil},
		"empty owner":            {"", "TRD-200001", "WES", "ASX", "Sell", int64(1), nil},
		"negative price":         {querydb.TraderSubject, "TRD-200001", "WES", "ASX", "Buy", int64(1), engine.Decimal("-1")},
	}
	for name, args := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: insert, Args: args}})
			if !errors.Is(err, engine.ErrConstraint) {
				t.Fatalf("error %v, want ErrConstraint", err)
			}
		})
	}
}

// TestMatchesTheDemo checks the owners and accounts against the rest of the demo: the
// subjects of examples/users.json and the accounts the market-data backend reports.
func TestMatchesTheDemo(t *testing.T) {
	raw, err := os.ReadFile("../users.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Users []struct{ Username, Subject string } `json:"users"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	subjects := map[string]string{}
	for _, u := range file.Users {
		subjects[u.Username] = u.Subject
	}
	if subjects["demo"] != querydb.DemoSubject || subjects["trader"] != querydb.TraderSubject {
		t.Fatalf("users.json subjects %v, want demo %s and trader %s", subjects, querydb.DemoSubject, querydb.TraderSubject)
	}

	e := open(t)
	want := map[string]string{}
	for owner, accounts := range marketdata.DemoAccounts() {
		for _, a := range accounts {
			want[a.ID] = fmt.Sprint(owner, " ", a.Name, " ", a.Currency)
		}
	}
	got := map[string]string{}
	for _, r := range query(t, e, `SELECT "AccountId", "Owner", "Name", "Currency" FROM "Account"`) {
		got[r[0].(string)] = fmt.Sprint(r[1], " ", r[2], " ", r[3])
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("accounts\n%v\nwant (as the market-data backend has them)\n%v", got, want)
	}
	for _, owner := range []string{querydb.DemoSubject, querydb.TraderSubject} {
		if n := len(query(t, e, `SELECT 1 FROM "Order" WHERE "Owner" = ?`, owner)); n < 2 {
			t.Errorf("%s has %d orders, want a few", owner, n)
		}
	}
}
