package pgengine

// Names and types on PostgreSQL that the query service must not confuse: tables and
// columns that differ only in case, columns of types other than text, generated columns,
// the system catalogs. Each test says what should hold. All but
// TestPostgresSystemCatalogsUnreachable failed on the code they were written against
// (the "Before its fix" notes say how).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
)

// namesService serves script on a new PostgreSQL database under tables; every token is
// a user of its own (the token is its subject) holding the scope "S". It returns the
// server and the error of CheckCatalog (nil when the policy fits the database).
func namesService(t *testing.T, script string, tables []queryproxy.TablePolicy) (*httptest.Server, error) {
	t.Helper()
	dsn, _ := newDatabase(t, script)
	eng := openEngine(t, Config{DSN: dsn})
	h, err := queryproxy.New(queryproxy.Config{
		Engine: eng, Tables: tables,
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			return &queryproxy.Caller{Subject: tok, ClientID: "x", Scopes: []string{"S", "Service/Market"}}, true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkErr := h.CheckCatalog(context.Background())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, checkErr
}

// isJSONError reports whether body is the service's {"Error": {...}} shape.
func isJSONError(body string) bool {
	var v struct {
		Error *struct{ Code, Message string }
	}
	return json.Unmarshal([]byte(body), &v) == nil && v.Error != nil && v.Error.Code != ""
}

// TestPostgresCaseVariantTableNotConfused: PostgreSQL table names are case
// sensitive, so a schema can hold both orders (the table the policy names) and "Orders"
// (one it does not name: nobody may read it). A request for the listed table must be
// served from that table, never from the unlisted one; a policy whose name matches
// two tables ignoring case may instead be refused at start (CheckCatalog).
//
// Before its fix: sqlgen.Catalog.Table returns the first table equal ignoring ASCII case, and
// the catalog is ordered byte-wise ("Orders" < "orders"), so `select * from orders`
// reads "Orders" -- a table the policy never listed -- under orders' policy, and
// CheckCatalog accepts the policy.
func TestPostgresCaseVariantTableNotConfused(t *testing.T) {
	srv, checkErr := namesService(t, `
		CREATE TABLE "Orders" ("Id" int, "Secret" text);
		INSERT INTO "Orders" VALUES (1, 'unlisted-secret');
		CREATE TABLE orders ("Id" int, "Note" text);
		INSERT INTO orders VALUES (1, 'public');`,
		[]queryproxy.TablePolicy{{Table: "orders", Read: []string{"S"}}})
	if checkErr != nil {
		t.Logf("the ambiguous policy is refused at start: %v", checkErr)
		return
	}
	for _, stmt := range []string{`select * from orders`, `select * from Orders`, `select * from ORDERS`} {
		st, body, _ := postQuery(srv, "alice", stmt, 10*time.Second)
		if strings.Contains(body, "unlisted-secret") || strings.Contains(body, `"Secret"`) {
			t.Errorf("%s: %d %s: read the table \"Orders\", which the policy does not list", stmt, st, body)
		}
	}
	// The catalogue lists the table the policy means, not its case variant.
	st, body, _ := postQuery(srv, "alice", `select * from CatalogueTable`, 10*time.Second)
	if st != 200 || !strings.Contains(body, `"orders"`) || strings.Contains(body, `"Orders"`) {
		t.Errorf("the catalogue: %d %s, want orders alone", st, body)
	}
}

// TestPostgresOwnerColumnNotConfused: a per-user table whose owner column is
// owner (lower case) next to another column "Owner" (say, a display field). The owner
// filter must apply to the column the policy names; a policy naming a column ambiguous
// ignoring case may instead be refused at start.
//
// Before its fix: the owner column is resolved with sqlgen.Table.Column, the first column
// equal ignoring ASCII case, which is "Owner" (it comes first): a caller whose subject
// equals that column's value reads every user's rows (here alice's and bob's), and the
// real owners see none of theirs.
func TestPostgresOwnerColumnNotConfused(t *testing.T) {
	srv, checkErr := namesService(t, `
		CREATE TABLE "Box" ("Owner" text, "Id" int, owner text, "Note" text);
		INSERT INTO "Box" VALUES ('shared', 1, 'alice', 'alice-note'), ('shared', 2, 'bob', 'bob-note');`,
		[]queryproxy.TablePolicy{{Table: "Box", Read: []string{"S"}, Owner: "owner"}})
	if checkErr != nil {
		t.Logf("the ambiguous owner column is refused at start: %v", checkErr)
		return
	}
	st, body, _ := postQuery(srv, "shared", `select Id, Note from Box`, 10*time.Second)
	if strings.Contains(body, "alice-note") || strings.Contains(body, "bob-note") {
		t.Errorf("the user \"shared\" reads other users' rows: %d %s", st, body)
	}
	st, body, _ = postQuery(srv, "alice", `select Id, Note from Box`, 10*time.Second)
	if strings.Contains(body, "bob-note") {
		t.Errorf("alice reads bob's row: %d %s", st, body)
	}
}

// TestPostgresNonTextColumns: columns the engine reports as String whose PostgreSQL
// type is not text (uuid, an enum, json, an array, interval, inet, cidr, "char"; docs/configuration/gatehouse_query.md: "any
// other type ... String") take every String operator the language offers, and follow the
// comparison rules on the text a result shows: ordered and matched byte-wise, equal when
// the text is. uuid is compared as itself (its order is its text's), so a value that is
// not a uuid is a 400. Sent as a parallel burst by several users.
//
// Before its first fix: sqlgen wrote COLLATE "C" for ordering and patterns on every
// String column, which PostgreSQL refuses on a type that has no collation (42804), and =
// on json has no operator (42883); the engine classified neither, so any reader of such
// a table got 500 internal_error, logged at error level, once per request. After it, they
// were 400s: refused, where a text column would have answered.
func TestPostgresNonTextColumns(t *testing.T) {
	const (
		one   = "11111111-1111-1111-1111-111111111111"
		two   = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
		three = "0fffffff-ffff-ffff-ffff-ffffffffffff"
	)
	// The enum's declared order (sad before happy) and inet's (.9 before .10) are not
	// their text's; '1' is an interval (one second) but no row's text is below it.
	srv, checkErr := namesService(t, `
		CREATE TYPE mood AS ENUM ('sad', 'happy');
		CREATE TABLE "Doc" ("Id" uuid PRIMARY KEY, "Mood" mood, "Meta" json, "Tags" text[], "Span" interval,
			"Addr" inet, "Grade" "char", "Net" cidr);
		INSERT INTO "Doc" VALUES
			('`+one+`', 'happy', '{"a":1}', '{x,y}', '1 day', '10.0.0.9', 'a', '192.168.0.0/24'),
			('`+two+`', 'sad', '{"b": 2}', '{Z}', '02:00:00', '10.0.0.10/32', 'B', '10.1.0.0/16'),
			('`+three+`', NULL, NULL, NULL, NULL, NULL, NULL, NULL);`,
		[]queryproxy.TablePolicy{{Table: "Doc", Read: []string{"S"}}})
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	tests := []struct {
		stmt string
		want []string // the Ids, in order; nil: a 400 query error
	}{
		{`select Id from Doc where Id BEGINS '1111'`, []string{one}},
		{`select Id from Doc where Id CONTAINS '-9C0B-'`, []string{}},
		{`select Id from Doc where Id LIKE '*-9c0b-*'`, []string{two}},
		{`select Id from Doc order by Id`, []string{three, one, two}},
		{`select Id from Doc order by Id desc`, []string{two, one, three}},
		{`select Id from Doc where Id > '` + one + `'`, []string{two}},
		{`select Id from Doc where Id BETWEEN '` + three + `' AND '` + one + `' order by Id`, []string{three, one}},
		{`select Id from Doc where Id = '` + strings.ToUpper(two) + `'`, []string{two}},
		{`select Id from Doc where Id IN ['` + one + `', '` + three + `'] order by Id`, []string{three, one}},
		{`select Id from Doc where Id = 'not-a-uuid'`, nil},
		{`select Id from Doc order by Mood desc`, []string{three, two, one}},
		{`select Id from Doc where Mood BETWEEN 'a' AND 'r'`, []string{one}},
		{`select Id from Doc where Mood = 'angry'`, []string{}},
		{`select Id from Doc where Meta = '{"b": 2}'`, []string{two}},
		{`select Id from Doc where Meta = '{"b":2}'`, []string{}},
		{`select Id from Doc where Meta IN ['{}', '{"a":1}']`, []string{one}},
		{`select Id from Doc where Meta CONTAINS '"a"'`, []string{one}},
		{`select Id from Doc where Tags CONTAINS 'x'`, []string{one}},
		{`select Id from Doc where Tags = '{Z}'`, []string{two}},
		{`select Id from Doc where Span < '1'`, []string{two}},
		{`select Id from Doc where Span = '24:00:00'`, []string{}},
		{`select Id from Doc order by Addr`, []string{two, one, three}},
		{`select Id from Doc where Addr LIKE '10.*' order by Addr desc`, []string{one, two}},
		{`select Id from Doc where Addr >= '10.0.0.2'`, []string{one}},
		{`select Id from Doc where Addr = '10.0.0.9'`, []string{one}},
		{`select Id from Doc where Addr <= '10.0.0.9' order by Addr`, []string{two, one}},
		{`select Id from Doc where Addr LIKE '*.9'`, []string{one}},
		{`select Id from Doc where Net = '10.1.0.0/16'`, []string{two}},
		{`select Id from Doc where Net BEGINS '192.168.0.0/'`, []string{one}},
		{`select Id from Doc order by Grade`, []string{two, one, three}},
		{`select Id from Doc where Grade = 'b'`, []string{}},
	}
	var wg sync.WaitGroup
	for i, tt := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, body, _ := postQuery(srv, "user"+strconv.Itoa(i), tt.stmt, 10*time.Second)
			if tt.want == nil {
				if st != http.StatusBadRequest || !isJSONError(body) {
					t.Errorf("%s: %d %s, want a 400 query error", tt.stmt, st, body)
				}
				return
			}
			var res struct{ Rows [][]string }
			if st != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
				t.Errorf("%s: %d %s, want 200 with Ids %v", tt.stmt, st, body, tt.want)
				return
			}
			got := []string{}
			for _, r := range res.Rows {
				got = append(got, r[0])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s: Ids %v, want %v", tt.stmt, got, tt.want)
			}
		}()
	}
	wg.Wait()
}

// TestPostgresOwnerOfNonTextType: a per-user table whose owner column is a uuid serves
// an owner whose subject is a uuid as the column prints one, and refuses (403: the
// caller owns none of its rows) any other subject: PostgreSQL would read the upper-case spelling of a uuid as the uuid itself,
// so that subject would read, and write rows as, the user whose subject is the lower-case
// one. An owner column of another non-text type (citext's kind, here an enum) compares
// as text, byte-wise. A name column is compared as text, never cut to 63 bytes.
func TestPostgresOwnerOfNonTextType(t *testing.T) {
	const lower = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	long := strings.Repeat("n", 63)
	srv, checkErr := namesService(t, `
		CREATE TYPE who AS ENUM ('alice', 'Alice');
		CREATE TABLE "Own" ("Owner" uuid NOT NULL, "Note" text);
		INSERT INTO "Own" VALUES ('`+lower+`', 'mine');
		CREATE TABLE "Tag" ("Owner" who NOT NULL, "Note" text);
		INSERT INTO "Tag" VALUES ('alice', 'alice-note'), ('Alice', 'Alice-note');
		CREATE TABLE "Nm" ("N" name, "Note" text);
		INSERT INTO "Nm" VALUES ('`+long+`', 'long');`,
		[]queryproxy.TablePolicy{
			{Table: "Own", Read: []string{"S"}, Write: []string{"S"}, Owner: "Owner"},
			{Table: "Tag", Read: []string{"S"}, Owner: "Owner"},
			{Table: "Nm", Read: []string{"S"}},
		})
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	tests := []struct {
		subject, stmt string
		status        int
		body          string // a part of the body
	}{
		{lower, `select Note from Own`, 200, `"Rows":[["mine"]]`},
		{strings.ToUpper(lower), `select Note from Own`, 403, `"Code":"forbidden"`},
		{strings.ToUpper(lower), `insert into Own (Note) values ('theirs')`, 403, `"Code":"forbidden"`},
		{"{" + lower + "}", `delete from Own where Note = 'mine'`, 403, `"Code":"forbidden"`},
		{"alice", `select Note from Own`, 403, `"Code":"forbidden"`},
		{"alice", `select Note from Tag`, 200, `"Rows":[["alice-note"]]`},
		{"ALICE", `select Note from Tag`, 200, `"Rows":[]`},
		{"x", `select Note from Nm where N = '` + long + `xyz'`, 200, `"Rows":[]`},
		{"x", `select Note from Nm where N = '` + long + `'`, 200, `"Rows":[["long"]]`},
	}
	for _, tt := range tests {
		st, body, _ := postQuery(srv, tt.subject, tt.stmt, 10*time.Second)
		if st != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("%s as %q: %d %s, want %d with %s", tt.stmt, tt.subject, st, body, tt.status, tt.body)
		}
	}
	if st, body, _ := postQuery(srv, lower, `select Note from Own`, 10*time.Second); st != 200 || !strings.Contains(body, `"Rows":[["mine"]]`) {
		t.Errorf("the table changed: %d %s", st, body)
	}
}

// TestPostgresGeneratedColumnWriteNo500: a write naming a column the database
// generates (GENERATED ALWAYS AS IDENTITY, GENERATED ALWAYS AS (...) STORED) cannot
// succeed; it must be refused with a 4xx query error (403 as for a read-only column, or
// 400), never 500, and change nothing.
//
// Before its fix: PostgreSQL answers SQLSTATE 428C9 (generated_always), which classify leaves
// unclassified, so every such write is 500 internal_error, logged at error level.
func TestPostgresGeneratedColumnWriteNo500(t *testing.T) {
	srv, checkErr := namesService(t, `
		CREATE TABLE "Gen" ("Id" bigint GENERATED ALWAYS AS IDENTITY, "Owner" text NOT NULL, "Body" text,
			"Len" int GENERATED ALWAYS AS (length("Body")) STORED);
		INSERT INTO "Gen" ("Owner", "Body") VALUES ('alice', 'hello');`,
		[]queryproxy.TablePolicy{{Table: "Gen", Read: []string{"S"}, Write: []string{"S"}, Owner: "Owner"}})
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	for _, stmt := range []string{
		`insert into Gen (Id, Body) values (5, 'x')`,
		`insert into Gen (Len, Body) values (5, 'x')`,
		`update Gen set Len = 1 where Body = 'hello'`,
		`update Gen set Id = 7 where Body = 'hello'`,
	} {
		st, body, _ := postQuery(srv, "alice", stmt, 10*time.Second)
		if st < 400 || st >= 500 || !isJSONError(body) {
			t.Errorf("%s: %d %s, want a 4xx query error", stmt, st, body)
		}
	}
	st, body, _ := postQuery(srv, "alice", `select Id, Body, Len from Gen`, 10*time.Second)
	if st != 200 || !strings.Contains(body, `"Rows":[[1,"hello",5]]`) {
		t.Errorf("the table changed: %d %s", st, body)
	}
}

// TestPostgresSystemCatalogsUnreachable: PostgreSQL's own relations (pg_catalog is first
// on the engine's search path) and information_schema cannot be named, in any case or
// spelling the language takes, by a signed-in caller, through
// either endpoint: 404 unknown_table or 400, never a row. (It held when written.)
func TestPostgresSystemCatalogsUnreachable(t *testing.T) {
	srv, checkErr := namesService(t, querydb.PostgresSQL, demoTables)
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	for _, name := range []string{"pg_class", "PG_CLASS", "pg_authid", "pg_shadow", "pg_roles", "pg_settings",
		"pg_stat_activity", "pg_user", "pg_namespace", "pg_largeobject", "pg_file_settings", "tables", "columns",
		"information_schema.tables", "pg_catalog.pg_class", "public.Security", `"Security"`} {
		st, body, _ := postQuery(srv, "trader", "select * from "+name, 10*time.Second)
		if (st != 404 && st != 400) || !isJSONError(body) {
			t.Errorf("select * from %s: %d %s", name, st, body)
		}
		req, _ := http.NewRequest("POST", srv.URL+"/query/"+name+"/select", nil)
		req.Header.Set("Authorization", "Bearer trader")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			if resp.StatusCode != 404 && resp.StatusCode != 400 {
				t.Errorf("/query/%s/select: %d", name, resp.StatusCode)
			}
			resp.Body.Close()
		}
	}
}
