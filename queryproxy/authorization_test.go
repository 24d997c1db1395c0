package queryproxy_test

// What a caller may reach: crafted statements and bodies that try to reach a table,
// column or row the policy closes, sent in parallel bursts from several users, and the
// policy's own checks.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// TestAuthorizationConfines: crafted statements and structured requests that try to
// reach a table, column or row the caller may not; each must be refused or confined, in
// a parallel burst from several users. (It held when written.)
func TestAuthorizationConfines(t *testing.T) {
	s := serviceWithTables(t, sqliteengine.Config{}, "", nil, nil)
	type try struct {
		token, path, ct, body string
		want                  int
	}
	q := func(token, stmt string, want int) try { return try{token, "/query", textPlain, stmt, want} }
	tries := []try{
		q("demo", `select * from Order`, 403),
		q("demo", `select * from "Order"`, 400),
		q("demo", `select * from main.Order`, 400),
		q("demo", `select * from Order--`, 400),
		q("demo", `select * from Security; select * from Order`, 400),
		q("demo", `select * from Security /* */`, 400),
		q("demo", "select * from Orde\u0072", 403),
		q("demo", "select * from Or\u0501er", 400),
		q("demo", `select * from sqlite_schema`, 404),
		q("demo", `select * from sqlite_master`, 404),
		q("demo", `select * from pragma_table_info`, 404),
		q("demo", `select rowid from Security`, 404),
		q("demo", `select Code from Security where rowid > 0`, 404),
		q("demo", `select Code from Security where Code = load_extension('x')`, 400),
		q("trader", `select RoutingNote from Order`, 404),
		q("trader", `select OrderId from Order where RoutingNote IS NULL`, 404),
		q("trader", `select OrderId from Order order by RoutingNote`, 404),
		q("trader", `select InternalRef from Account`, 404),
		q("trader", `update Order set Owner = 'x' where OrderId > 0`, 400),
		q("trader", `update Order set RoutingNote = 'x' where OrderId > 0`, 404),
		q("trader", `insert into Order (Owner, AccountId, Code, Exchange, Side, Quantity) values ('`+querydb.DemoSubject+`', 'DEMO-100001', 'BHP', 'ASX', 'Buy', 1)`, 403),
		q("trader", `insert into Order (owner, AccountId, Code, Exchange, Side, Quantity) values (NULL, 'DEMO-100001', 'BHP', 'ASX', 'Buy', 1)`, 403),
		q("trader", `insert into Security (Code, Exchange, Name, Currency, Updated) values ('X', 'ASX', 'x', 'AUD', '2026-01-01T00:00:00Z')`, 403),
		q("viewer", `insert into Order (AccountId, Code, Exchange, Side, Quantity) values ('TRD-200001', 'BHP', 'ASX', 'Buy', 1)`, 403),
		q("trader", `delete from Order`, 400),
		q("trader", `select * from CatalogueTable where Name = 'Order' order by Name limit 1`, 200),
		q("demo", `insert into CatalogueTable (Name) values ('x')`, 404),
		{"trader", "/query/Order/select?columns=RoutingNote", appJSON, "", 404},
		{"trader", "/query/Order/select", appJSON, `[{"ColumnName":"RoutingNote","Operator":"=","Value":"x"}]`, 404},
		{"trader", "/query/Order/select", appJSON, `[{"ColumnName":"Owner\"","Operator":"=","Value":"x"}]`, 400},
		{"trader", "/query/Order/select", appJSON, `[{"ColumnName":"Owner","Operator":"= 1 OR 1","Value":"x"}]`, 400},
		{"trader", "/query/Order/insert", appJSON, `{"RoutingNote":"x","AccountId":"TRD-200001","Code":"BHP","Exchange":"ASX","Side":"Buy","Quantity":1}`, 404},
		{"trader", "/query/Order/insert", appJSON, `{"OWNER":"` + querydb.DemoSubject + `","AccountId":"DEMO-100001","Code":"BHP","Exchange":"ASX","Side":"Buy","Quantity":1}`, 403},
		{"demo", "/query/Order/select", appJSON, "", 403},
		{"demo", "/query/CatalogueTable/insert", appJSON, `{"Name":"x"}`, 404},
		{"demo", "/query/Security\u212a/select", appJSON, "", 400},
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for round := range 3 {
		for i, tr := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, body, _ := timedPost(t, s.srv.URL+tr.path, tr.token, tr.ct, tr.body, 20*time.Second)
				if st == 429 {
					return // the per-user bound; the burst is larger than it
				}
				if st != tr.want || st == 500 || !strings.HasPrefix(body, "{") {
					mu.Lock()
					t.Errorf("round %d try %d %s %q: %d %s, want %d", round, i, tr.path, tr.body, st, body, tr.want)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	// Rows of other users were not changed, and none was added for them.
	r := s.query(t, "trader", `update Order set Status = 'Hacked' where OrderId > 0`)
	if r.status != 200 || r.result.RowsAffected == nil || *r.result.RowsAffected != 4 {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	d := s.query(t, "demo", `select * from CatalogueTable`)
	if strings.Contains(d.body, `"Order"`) || strings.Contains(d.body, `"Account"`) {
		t.Errorf("the catalogue lists tables demo may not read: %s", d.body)
	}
}

// TestPerUserKeyNotAnOracle: a per-user table's rows are invisible to other users, but
// its key is shared: an UPDATE of one's own order to another OrderId answered 409 when
// another user's order held that id and 200 otherwise, and so did an insert naming one,
// so a trader could enumerate the order ids (the number and timing of orders) of every
// other user. With OrderId read-only (TablePolicy.ReadOnly, as the demo has it) both are
// refused alike, 403, whether the id is taken or not, and an insert without it gets one.
func TestPerUserKeyNotAnOracle(t *testing.T) {
	s := serviceWithTables(t, sqliteengine.Config{}, "", nil, nil)
	for _, id := range []int{1, 2, 1000} { // the demo user's orders 1 and 2; the trader owns 3 to 6
		for _, stmt := range []string{
			fmt.Sprintf(`update Order set OrderId = %d where OrderId = 3`, id),
			fmt.Sprintf(`insert into Order (OrderId, AccountId, Code, Exchange, Side, Quantity) values (%d, 'TRD-200001', 'BHP', 'ASX', 'Buy', 1)`, id),
		} {
			if r := s.query(t, "trader", stmt); r.status != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
				t.Errorf("%s: %d %s, want 403 read-only", stmt, r.status, r.body)
			}
		}
	}
	if r := s.query(t, "trader", `insert into Order (AccountId, Code, Exchange, Side, Quantity) values ('TRD-200001', 'BHP', 'ASX', 'Buy', 1)`); r.status != 200 {
		t.Fatalf("an insert without the key: %d %s", r.status, r.body)
	}
}

// TestReadOnlyPolicyChecks: a read-only column must be an identifier, not hidden, and in
// the table.
func TestReadOnlyPolicyChecks(t *testing.T) {
	if err := queryproxy.ValidatePolicy([]queryproxy.TablePolicy{{Table: "Order", Read: []string{"r"}, ReadOnly: []string{"Order Id"}}}); err == nil ||
		!strings.Contains(err.Error(), `read-only column "Order Id" is not an identifier`) {
		t.Errorf("a read-only column not an identifier: %v", err)
	}
	if err := queryproxy.ValidatePolicy([]queryproxy.TablePolicy{{Table: "Order", Read: []string{"r"}, Hidden: []string{"Note"}, ReadOnly: []string{"note"}}}); err == nil ||
		!strings.Contains(err.Error(), "both hidden and read-only") {
		t.Errorf("a column both hidden and read-only (a write naming it would tell it exists): %v", err)
	}
	p, err := queryproxy.NewPolicy([]queryproxy.TablePolicy{{Table: "Order", Read: []string{"r"}, ReadOnly: []string{"Missing"}}})
	if err != nil {
		t.Fatal(err)
	}
	cat := sqlgen.Catalog{Tables: []sqlgen.Table{{Name: "Order", Columns: []sqlgen.Column{{Name: "OrderId", Type: sqlgen.Integer}}}}}
	if err := p.CheckCatalog(cat); err == nil || !strings.Contains(err.Error(), `read-only column "Missing" not in the table`) {
		t.Errorf("a read-only column not in the table: %v", err)
	}
}
