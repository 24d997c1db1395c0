package sqlgen

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// These tests run generated SQL on real engines, SQLite always (sqlite_test.go) and
// PostgreSQL when one is configured (postgres_test.go), against the same rows and the same
// expected answers: that is what proves the comparison rules of the package doc hold on
// every engine. The schemas are deliberately hostile: on SQLite, Security.Name and
// Order.Owner are declared COLLATE NOCASE; on PostgreSQL, text columns use a linguistic
// ICU collation when the server has one.

// testDB is an open test database and how to write its schema.
type testDB struct {
	db *sql.DB
	d  Dialect
	// sqlType maps a catalog type to a column type; textCollation is added to text columns.
	sqlType map[Type]string
	// nocase lists "Table.Column" declared case-insensitive (SQLite only).
	nocase map[string]bool
}

// securityRows are the rows of Security: codes that exercise case, the metacharacters of
// LIKE, GLOB and ESCAPE, quotes, non-ASCII text and NULL.
var securityRows = [][]any{
	// Id, Code, Name, Price, Volume, Listed, Active
	{int64(1), "BHP", "Alpha", "37.48", int64(100), "2024-01-02 10:00:00", true},
	{int64(2), "bhp", "alpha", "37.5", int64(200), "2023-12-31 23:59:59", false},
	{int64(3), "B%P", "ALPHA", "0.1", int64(1), "2024-01-01 00:00:00", true},
	{int64(4), "B_P", "beta", "-1", int64(2), nil, nil},
	{int64(5), "A*B", nil, "2.5", nil, nil, false},
	{int64(6), "a?c", nil, nil, nil, nil, nil},
	{int64(7), "[x]", nil, nil, nil, nil, nil},
	{int64(8), `back\slash`, nil, nil, nil, nil, nil},
	{int64(9), "it's", nil, nil, nil, nil, nil},
	{int64(10), nil, nil, nil, nil, nil, nil},
	{int64(11), "Zürich", nil, nil, nil, nil, nil},
	{int64(12), "Ärger", nil, nil, nil, nil, nil},
	{int64(13), "", nil, nil, nil, nil, nil},
	{int64(14), "BHPX", nil, nil, nil, nil, nil},
}

// orderRows are the rows of Order, owned by two users; user-1's look-alike "User-1" owns one.
var orderRows = [][]any{
	// Id, Owner, Code, Qty, Price, Side, Note
	{int64(1), "user-1", "A", int64(1), "1", "buy", nil},
	{int64(2), "user-1", "B", int64(2), "2", "sell", nil},
	{int64(3), "user-2", "A", int64(3), "3", "buy", nil},
	{int64(4), "user-2", "B", int64(4), "4", "sell", nil},
	{int64(5), "User-1", "A", int64(5), "5", "buy", nil},
}

// semanticCases are IQL selects of Id with the Ids each engine must return; ordered says
// whether the order matters.
var semanticCases = []struct {
	iql     string
	opts    Options
	want    []int64
	ordered bool
}{
	{"select Id from Security where Code = 'BHP'", Options{}, []int64{1}, false},
	{"select Id from Security where Code <> 'BHP'", Options{}, []int64{2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14}, false},
	{"select Id from Security where Name = 'alpha'", Options{}, []int64{2}, false},
	{"select Id from Security where Name in ['alpha', 'BETA']", Options{}, []int64{2}, false},
	{"select Id from Security where Name <> 'alpha'", Options{}, []int64{1, 3, 4}, false},
	{"select Id from Security where Code > 'Z'", Options{}, []int64{2, 6, 7, 8, 9, 11, 12}, false},
	{"select Id from Security where Code between 'A' and 'C'", Options{}, []int64{1, 3, 4, 5, 14}, false},
	{"select Id from Security where Name < 'a'", Options{}, []int64{1, 3}, false},
	{"select Id from Security where Code is not null order by Code", Options{},
		[]int64{13, 5, 3, 1, 14, 4, 11, 7, 6, 8, 2, 9, 12}, true},
	{"select Id from Security where Id < 4 or Id = 10 order by Code desc", Options{}, []int64{10, 2, 1, 3}, true},
	{"select Id from Security where Id < 4 or Id = 10 order by Code", Options{}, []int64{3, 1, 2, 10}, true},
	{"select Id from Security where Code like 'B*'", Options{}, []int64{1, 3, 4, 14}, false},
	{"select Id from Security where Code like 'B%P'", Options{}, []int64{3}, false},
	{"select Id from Security where Code like 'B_P'", Options{}, []int64{4}, false},
	{"select Id from Security where Code like 'b*'", Options{}, []int64{2, 8}, false},
	{`select Id from Security where Code like 'back\*'`, Options{}, []int64{8}, false},
	{"select Id from Security where Code like 'A*'", Options{}, []int64{5}, false},
	{"select Id from Security where Code like '*[*'", Options{}, []int64{7}, false},
	{"select Id from Security where Code like 'a?c'", Options{}, []int64{6}, false},
	{"select Id from Security where Code like 'a?*'", Options{}, []int64{6}, false},
	{"select Id from Security where Code like '?*'", Options{}, nil, false},
	{"select Id from Security where Code like 'it''s'", Options{}, []int64{9}, false},
	{"select Id from Security where Code like ''", Options{}, []int64{13}, false},
	{"select Id from Security where Code like '*'", Options{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14}, false},
	{"select Id from Security where Code like '*h*'", Options{}, []int64{2, 8, 11}, false},
	{"select Id from Security where Code not like 'B*'", Options{}, []int64{2, 5, 6, 7, 8, 9, 11, 12, 13}, false},
	{"select Id from Security where Code begins 'B_'", Options{}, []int64{4}, false},
	{"select Id from Security where Code begins 'BHP'", Options{}, []int64{1, 14}, false},
	{"select Id from Security where Code begins 'Ä'", Options{}, []int64{12}, false},
	{"select Id from Security where Code begins 'ä'", Options{}, nil, false},
	{"select Id from Security where Code contains '%'", Options{}, []int64{3}, false},
	{"select Id from Security where Code contains '*'", Options{}, []int64{5}, false},
	{"select Id from Security where Code contains '?'", Options{}, []int64{6}, false},
	{"select Id from Security where Code contains '['", Options{}, []int64{7}, false},
	{`select Id from Security where Code contains '\'`, Options{}, []int64{8}, false},
	{"select Id from Security where Code contains 'ü'", Options{}, []int64{11}, false},
	{"select Id from Security where Code contains 'H'", Options{}, []int64{1, 14}, false},
	{"select Id from Security where Code contains ''", Options{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14}, false},
	{"select Id from Security where Price = 37.480", Options{}, []int64{1}, false},
	{"select Id from Security where Price > 37.48", Options{}, []int64{2}, false},
	{"select Id from Security where Price = 0.1 or Price = -1", Options{}, []int64{3, 4}, false},
	{"select Id from Security where Price between 0 and 2.5", Options{}, []int64{3, 5}, false},
	{"select Id from Security where Volume in [1, 2, 100]", Options{}, []int64{1, 3, 4}, false},
	{"select Id from Security where Active = true", Options{}, []int64{1, 3}, false},
	{"select Id from Security where Active = false", Options{}, []int64{2, 5}, false},
	{"select Id from Security where Active is null and Id < 5", Options{}, []int64{4}, false},
	{"select Id from Security where Listed >= '2024-01-01 00:00:00'", Options{}, []int64{1, 3}, false},
	{"select Id from Security where not (Code = 'BHP' or Code = 'bhp') and Id < 5", Options{}, []int64{3, 4}, false},
	{"select Id from Security order by Id limit 3", Options{}, []int64{1, 2, 3}, true},
	{"select Id from Security order by Id", Options{MaxRows: 3}, []int64{1, 2, 3, 4}, true},
	{"select Id from Security order by Id limit 2", Options{MaxRows: 3}, []int64{1, 2}, true},
	// Owner: user-1 sees their rows only, even through an OR and against a NOCASE column.
	{"select Id from Order", owner1, []int64{1, 2}, false},
	{"select Id from Order where Code = 'A' or Code = 'B'", owner1, []int64{1, 2}, false},
	{"select Id from Order where Id = 3 or Id = 5 or Qty > 0", owner1, []int64{1, 2}, false},
	{"select Id from Order where not Code = 'A'", owner1, []int64{2}, false},
}

// createSchema creates testCatalog's tables and fills Security and Order.
func (tdb *testDB) createSchema(t *testing.T) {
	t.Helper()
	for _, tab := range testCatalog.Tables {
		var cols []string
		for _, c := range tab.Columns {
			typ := tdb.sqlType[c.Type]
			if tdb.nocase[tab.Name+"."+c.Name] {
				typ += " COLLATE NOCASE"
			}
			cols = append(cols, quoteTest(c.Name)+" "+typ)
		}
		tdb.mustExec(t, fmt.Sprintf("CREATE TABLE %s (%s)", quoteTest(tab.Name), strings.Join(cols, ", ")))
	}
	tdb.insertRows(t, "Security", securityRows)
	tdb.insertRows(t, "Order", orderRows)
}

// quoteTest quotes a name for the test's own SQL, written independently of sqlgen.
func quoteTest(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func (tdb *testDB) insertRows(t *testing.T, table string, rows [][]any) {
	t.Helper()
	tab, _ := testCatalog.Table(table)
	for _, row := range rows {
		var names, marks []string
		var args []any
		for i, c := range tab.Columns {
			names = append(names, quoteTest(c.Name))
			v := row[i]
			if c.Type == Decimal && v != nil && tdb.d == SQLite {
				var f float64
				fmt.Sscan(v.(string), &f)
				v = f
			}
			args = append(args, v)
			if tdb.d == SQLite {
				marks = append(marks, "?")
			} else {
				marks = append(marks, fmt.Sprintf("$%d", i+1))
			}
		}
		tdb.mustExec(t, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", quoteTest(table), strings.Join(names, ", "), strings.Join(marks, ", ")), args...)
	}
}

func (tdb *testDB) mustExec(t *testing.T, q string, args ...any) sql.Result {
	t.Helper()
	res, err := tdb.db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

// ids runs a generated SELECT of Id.
func (tdb *testDB) ids(t *testing.T, st Statement) []int64 {
	t.Helper()
	rows, err := tdb.db.Query(st.SQL, st.Args...)
	if err != nil {
		t.Fatalf("%s %v: %v", st.SQL, st.Args, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func (tdb *testDB) generate(t *testing.T, src string, opts Options) Statement {
	t.Helper()
	st, err := Generate(tdb.d, testCatalog, mustParse(t, src), opts)
	if err != nil {
		t.Fatalf("Generate(%q): %v", src, err)
	}
	return st
}

// runSemantics runs every semantic case, then the owner's writes.
func runSemantics(t *testing.T, tdb *testDB) {
	tdb.createSchema(t)
	for _, tc := range semanticCases {
		t.Run(tc.iql, func(t *testing.T) {
			got := tdb.ids(t, tdb.generate(t, tc.iql, tc.opts))
			if !tc.ordered {
				sortIDs(got)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s: got %v, want %v", tdb.generate(t, tc.iql, tc.opts).SQL, got, tc.want)
			}
		})
	}
	t.Run("owner writes", func(t *testing.T) { ownerWrites(t, tdb) })
	t.Run("typed writes", func(t *testing.T) { typedWrites(t, tdb) })
}

// typedWrites checks that a number written to a String column is stored as written, and
// that NULL and booleans reach their columns, on every engine.
func typedWrites(t *testing.T, tdb *testDB) {
	st := tdb.generate(t, "insert into News (Id, Headline, Body) values (1, 007, null), (2, -1.50, 'x')", Options{})
	tdb.mustExec(t, st.SQL, st.Args...)
	st = tdb.generate(t, "update Security set Active = true, Name = 2.50 where Id = 4", Options{})
	tdb.mustExec(t, st.SQL, st.Args...)
	var got []string
	for _, q := range []string{
		`SELECT "Headline" FROM "News" WHERE "Id" = 1 AND "Body" IS NULL`,
		`SELECT "Headline" FROM "News" WHERE "Id" = 2`,
		`SELECT "Name" FROM "Security" WHERE "Id" = 4 AND "Active"`,
	} {
		var s string
		if err := tdb.db.QueryRow(q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got = append(got, s)
	}
	if want := []string{"007", "-1.50", "2.50"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if ids := tdb.ids(t, tdb.generate(t, "select Id from News where Headline = 007 or Headline = -1.5", Options{})); !reflect.DeepEqual(ids, []int64{1}) {
		t.Fatalf("number compared with a String column as its text: %v, want [1]", ids)
	}
}

// ownerWrites checks that user-1 can change and delete only their rows, and that an insert
// gets their owner.
func ownerWrites(t *testing.T, tdb *testDB) {
	exec := func(src string) int64 {
		st := tdb.generate(t, src, owner1)
		n, err := tdb.mustExec(t, st.SQL, st.Args...).RowsAffected()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := exec("update Order set Note = 'x' where Id = 3 or Id = 5 or Id = 1"); n != 1 {
		t.Fatalf("update touched %d rows, want 1 (user-1's row 1 only)", n)
	}
	if n := exec("delete from Order where Code = 'A' or Code = 'B'"); n != 2 {
		t.Fatalf("delete touched %d rows, want 2", n)
	}
	if n := exec("insert into Order (Id, Code) values (6, 'C'), (7, 'D')"); n != 2 {
		t.Fatalf("insert added %d rows", n)
	}
	var owners []string
	rows, err := tdb.db.Query(`SELECT "Owner" FROM "Order" ORDER BY "Id"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, o)
	}
	if want := []string{"user-2", "user-2", "User-1", "user-1", "user-1"}; !reflect.DeepEqual(owners, want) {
		t.Fatalf("owners after the writes: %v, want %v", owners, want)
	}
}

func sortIDs(ids []int64) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}
