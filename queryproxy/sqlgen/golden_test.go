package sqlgen

import (
	"reflect"
	"strings"
	"testing"
)

// owner1 is the owner option of the per-user tables in these tests.
var owner1 = Options{Owner: &Owner{Column: "owner", Value: "user-1"}}

func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		iql    string
		opts   Options
		sqlite string
		lArgs  []any
		pg     string
		pArgs  []any
	}{
		{"star", "select * from security", Options{},
			`SELECT "Id", "Code", "Name", "Price", "Volume", "Listed", "Active" FROM "Security"`, nil,
			`SELECT "Id", "Code", "Name", "Price", "Volume", "Listed", "Active" FROM "Security"`, nil},
		{"catalog spelling", "SELECT code, PRICE FROM SECURITY WHERE code = 'BHP'", Options{},
			`SELECT "Code", "Price" FROM "Security" WHERE "Code" COLLATE BINARY = ?`, []any{"BHP"},
			`SELECT "Code", "Price" FROM "Security" WHERE "Code" = $1`, []any{"BHP"}},
		{"keyword table", "select Id from order where Qty > 10", Options{},
			`SELECT "Id" FROM "Order" WHERE "Qty" > ?`, []any{int64(10)},
			`SELECT "Id" FROM "Order" WHERE "Qty" > $1`, []any{int64(10)}},
		{"numbers", "select Code from Security where Price >= 37.480 and Price < -0.5 and Volume <> 9223372036854775808 and Price = 0.1000000000000000055511151231257827", Options{},
			`SELECT "Code" FROM "Security" WHERE "Price" >= ? AND "Price" < ? AND "Volume" <> ? AND "Price" = ?`,
			[]any{37.48, -0.5, "9223372036854775808", "0.1000000000000000055511151231257827"},
			`SELECT "Code" FROM "Security" WHERE "Price" >= $1::numeric AND "Price" < $2::numeric AND "Volume" <> $3::numeric AND "Price" = $4::numeric`,
			[]any{"37.480", "-0.5", "9223372036854775808", "0.1000000000000000055511151231257827"}},
		{"integers", "select Code from Security where Volume in [1, -007, 0]", Options{},
			`SELECT "Code" FROM "Security" WHERE "Volume" IN (?, ?, ?)`, []any{int64(1), int64(-7), int64(0)},
			`SELECT "Code" FROM "Security" WHERE "Volume" IN ($1, $2, $3)`, []any{int64(1), int64(-7), int64(0)}},
		{"booleans", "select Code from Security where Active = true or Active <> false", Options{},
			`SELECT "Code" FROM "Security" WHERE "Active" = ? OR "Active" <> ?`, []any{int64(1), int64(0)},
			`SELECT "Code" FROM "Security" WHERE "Active" = $1 OR "Active" <> $2`, []any{true, false}},
		{"text ordering", "select Code from Security where Code > 'B' and Name <= 'x' and Listed < '2024-01-01'", Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE BINARY > ? AND "Name" COLLATE BINARY <= ? AND "Listed" < ?`,
			[]any{"B", "x", "2024-01-01"},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE "C" > $1 AND "Name" COLLATE "C" <= $2 AND "Listed" < $3`,
			[]any{"B", "x", "2024-01-01"}},
		{"in text", `select Code from Security where Code in ["BHP", "ANZ"]`, Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE BINARY IN (?, ?)`, []any{"BHP", "ANZ"},
			`SELECT "Code" FROM "Security" WHERE "Code" IN ($1, $2)`, []any{"BHP", "ANZ"}},
		{"between", "select Code from Security where Code between 'A' and 'C' and Price between 1 and 2.5", Options{},
			`SELECT "Code" FROM "Security" WHERE ("Code" COLLATE BINARY BETWEEN ? AND ?) AND ("Price" BETWEEN ? AND ?)`,
			[]any{"A", "C", int64(1), 2.5},
			`SELECT "Code" FROM "Security" WHERE ("Code" COLLATE "C" BETWEEN $1 AND $2) AND ("Price" BETWEEN $3 AND $4::numeric)`,
			[]any{"A", "C", int64(1), "2.5"}},
		{"null tests", "select Code from Security where Name is null or Price is not null", Options{},
			`SELECT "Code" FROM "Security" WHERE "Name" IS NULL OR "Price" IS NOT NULL`, nil,
			`SELECT "Code" FROM "Security" WHERE "Name" IS NULL OR "Price" IS NOT NULL`, nil},
		{"like", `select Code from Security where Code like 'A*B%_?[]\*'`, Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" GLOB ?`, []any{`A*B%_[?][[]]\*`},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE "C" LIKE $1 ESCAPE '\'`, []any{`A%B\%\_?[]\\%`}},
		{"begins", `select Code from Security where Code begins 'B*%_'`, Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" GLOB ?`, []any{`B[*]%_*`},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE "C" LIKE $1 ESCAPE '\'`, []any{`B*\%\_%`}},
		{"contains", `select Code from Security where Name contains '?\'`, Options{},
			`SELECT "Code" FROM "Security" WHERE "Name" GLOB ?`, []any{`*[?]\*`},
			`SELECT "Code" FROM "Security" WHERE "Name" COLLATE "C" LIKE $1 ESCAPE '\'`, []any{`%?\\%`}},
		{"precedence", "select Code from Security where not (Code = 'a' or Code = 'b') and (Volume = 1 or not Volume = 2 and Volume = 3)", Options{},
			`SELECT "Code" FROM "Security" WHERE NOT ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?) AND ("Volume" = ? OR (NOT ("Volume" = ?) AND "Volume" = ?))`,
			[]any{"a", "b", int64(1), int64(2), int64(3)},
			`SELECT "Code" FROM "Security" WHERE NOT ("Code" = $1 OR "Code" = $2) AND ("Volume" = $3 OR (NOT ("Volume" = $4) AND "Volume" = $5))`,
			[]any{"a", "b", int64(1), int64(2), int64(3)}},
		{"not like", "select Code from Security where Code not like 'A*'", Options{},
			`SELECT "Code" FROM "Security" WHERE NOT ("Code" GLOB ?)`, []any{"A*"},
			`SELECT "Code" FROM "Security" WHERE NOT ("Code" COLLATE "C" LIKE $1 ESCAPE '\')`, []any{"A%"}},
		{"order and limit", "select Code from Security order by code desc, Price, Volume asc limit 10", Options{},
			`SELECT "Code" FROM "Security" ORDER BY "Code" COLLATE BINARY DESC NULLS FIRST, "Price" ASC NULLS LAST, "Volume" ASC NULLS LAST LIMIT ?`,
			[]any{int64(10)},
			`SELECT "Code" FROM "Security" ORDER BY "Code" COLLATE "C" DESC NULLS FIRST, "Price" ASC NULLS LAST, "Volume" ASC NULLS LAST LIMIT $1`,
			[]any{int64(10)}},
		{"max rows without limit", "select Code from Security", Options{MaxRows: 100},
			`SELECT "Code" FROM "Security" LIMIT ?`, []any{int64(101)},
			`SELECT "Code" FROM "Security" LIMIT $1`, []any{int64(101)}},
		{"max rows above limit", "select Code from Security limit 500", Options{MaxRows: 100},
			`SELECT "Code" FROM "Security" LIMIT ?`, []any{int64(101)},
			`SELECT "Code" FROM "Security" LIMIT $1`, []any{int64(101)}},
		{"max rows at limit", "select Code from Security limit 100", Options{MaxRows: 100},
			`SELECT "Code" FROM "Security" LIMIT ?`, []any{int64(100)},
			`SELECT "Code" FROM "Security" LIMIT $1`, []any{int64(100)}},
		{"limit zero", "select Code from Security limit 0", Options{MaxRows: 100},
			`SELECT "Code" FROM "Security" LIMIT ?`, []any{int64(0)},
			`SELECT "Code" FROM "Security" LIMIT $1`, []any{int64(0)}},
		{"owner select", "select Code from Order", owner1,
			`SELECT "Code" FROM "Order" WHERE "Owner" COLLATE BINARY = ?`, []any{"user-1"},
			`SELECT "Code" FROM "Order" WHERE "Owner" = $1`, []any{"user-1"}},
		{"owner select where", "select Code from Order where Code = 'A' or Code = 'B' limit 5", Options{Owner: owner1.Owner, MaxRows: 3},
			`SELECT "Code" FROM "Order" WHERE "Owner" COLLATE BINARY = ? AND ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?) LIMIT ?`,
			[]any{"user-1", "A", "B", int64(4)},
			`SELECT "Code" FROM "Order" WHERE "Owner" = $1 AND ("Code" = $2 OR "Code" = $3) LIMIT $4`,
			[]any{"user-1", "A", "B", int64(4)}},
		{"owner update", "update Order set Qty = 5, Note = null where Id = 7", owner1,
			`UPDATE "Order" SET "Qty" = ?, "Note" = ? WHERE "Owner" COLLATE BINARY = ? AND ("Id" = ?)`,
			[]any{int64(5), nil, "user-1", int64(7)},
			`UPDATE "Order" SET "Qty" = $1, "Note" = $2 WHERE "Owner" = $3 AND ("Id" = $4)`,
			[]any{int64(5), nil, "user-1", int64(7)}},
		{"owner delete", "delete from Order where Id = 7 or Id = 8", owner1,
			`DELETE FROM "Order" WHERE "Owner" COLLATE BINARY = ? AND ("Id" = ? OR "Id" = ?)`,
			[]any{"user-1", int64(7), int64(8)},
			`DELETE FROM "Order" WHERE "Owner" = $1 AND ("Id" = $2 OR "Id" = $3)`,
			[]any{"user-1", int64(7), int64(8)}},
		{"owner insert", "insert into Order (Code, Qty, Price) values ('BHP', 10, 37.5), ('ANZ', 1, null)", owner1,
			`INSERT INTO "Order" ("Code", "Qty", "Price", "Owner") VALUES (?, ?, ?, ?), (?, ?, ?, ?)`,
			[]any{"BHP", int64(10), 37.5, "user-1", "ANZ", int64(1), nil, "user-1"},
			`INSERT INTO "Order" ("Code", "Qty", "Price", "Owner") VALUES ($1, $2, $3::numeric, $4), ($5, $6, $7, $8)`,
			[]any{"BHP", int64(10), "37.5", "user-1", "ANZ", int64(1), nil, "user-1"}},
		{"insert", "insert into News (Id, Headline) values (1, 'it''s')", Options{},
			`INSERT INTO "News" ("Id", "Headline") VALUES (?, ?)`, []any{int64(1), "it's"},
			`INSERT INTO "News" ("Id", "Headline") VALUES ($1, $2)`, []any{int64(1), "it's"}},
		{"update", "update Security set Active = false where Code = 'X'", Options{},
			`UPDATE "Security" SET "Active" = ? WHERE "Code" COLLATE BINARY = ?`, []any{int64(0), "X"},
			`UPDATE "Security" SET "Active" = $1 WHERE "Code" = $2`, []any{false, "X"}},
		{"delete", "delete from News where Published < '2020-01-01'", Options{},
			`DELETE FROM "News" WHERE "Published" < ?`, []any{"2020-01-01"},
			`DELETE FROM "News" WHERE "Published" < $1`, []any{"2020-01-01"}},
		{"number for a String column goes as its text", "select Code from Security where Code = 007 or Code in [1.50, 'x'] or Name between 1 and 2", Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY IN (?, ?) OR ("Name" COLLATE BINARY BETWEEN ? AND ?)`,
			[]any{"007", "1.50", "x", "1", "2"},
			`SELECT "Code" FROM "Security" WHERE "Code" = $1 OR "Code" IN ($2, $3) OR ("Name" COLLATE "C" BETWEEN $4 AND $5)`,
			[]any{"007", "1.50", "x", "1", "2"}},
		{"number written to a String column", "insert into News (Id, Headline) values (1, 2.50)", Options{},
			`INSERT INTO "News" ("Id", "Headline") VALUES (?, ?)`, []any{int64(1), "2.50"},
			`INSERT INTO "News" ("Id", "Headline") VALUES ($1, $2)`, []any{int64(1), "2.50"}},
		{"injection attempt stays a value", `select Code from Security where Code = '''; DROP TABLE "Security"; --'`, Options{},
			`SELECT "Code" FROM "Security" WHERE "Code" COLLATE BINARY = ?`, []any{`'; DROP TABLE "Security"; --`},
			`SELECT "Code" FROM "Security" WHERE "Code" = $1`, []any{`'; DROP TABLE "Security"; --`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt := mustParse(t, tt.iql)
			for _, d := range []struct {
				d    Dialect
				sql  string
				args []any
			}{{SQLite, tt.sqlite, tt.lArgs}, {PostgreSQL, tt.pg, tt.pArgs}} {
				got, err := Generate(d.d, testCatalog, stmt, tt.opts)
				if err != nil {
					t.Fatalf("%s: %v", d.d, err)
				}
				if got.SQL != d.sql {
					t.Errorf("%s SQL\n got %s\nwant %s", d.d, got.SQL, d.sql)
				}
				if !reflect.DeepEqual(got.Args, d.args) {
					t.Errorf("%s args\n got %#v\nwant %#v", d.d, got.Args, d.args)
				}
			}
		})
	}
}

// TestGoldenPostgresText: how each Text kind of a String column is compared on
// PostgreSQL (SQLite ignores the kind), the owner's comparison included.
func TestGoldenPostgresText(t *testing.T) {
	cat := Catalog{Tables: []Table{{Name: "Doc", Columns: []Column{
		{Name: "Id", Type: String, Text: TextUUID}, {Name: "Owner", Type: String, Text: TextUUID},
		{Name: "Mood", Type: String, Text: TextCast}, {Name: "Code", Type: String},
		{Name: "Addr", Type: String, Text: TextInet},
	}}}}
	tests := []struct{ iql, pg, sqlite string }{
		{`select Id from Doc where Id = 'a' and Mood = 'b' and Code = 'c'`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" = $1 AND ("Id" = $2 AND "Mood"::text = $3 AND "Code" = $4)`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" COLLATE BINARY = ? AND ("Id" COLLATE BINARY = ? AND "Mood" COLLATE BINARY = ? AND "Code" COLLATE BINARY = ?)`},
		{`select Id from Doc where Id in ['a'] and Mood in ['b'] and Id > 'c' and Mood between 'd' and 'e'`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" = $1 AND ("Id" IN ($2) AND "Mood"::text IN ($3) AND "Id" > $4 AND ("Mood"::text COLLATE "C" BETWEEN $5 AND $6))`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" COLLATE BINARY = ? AND ("Id" COLLATE BINARY IN (?) AND "Mood" COLLATE BINARY IN (?) AND "Id" COLLATE BINARY > ? AND ("Mood" COLLATE BINARY BETWEEN ? AND ?))`},
		{`select Id from Doc where Id begins 'a' and Mood contains 'b' and Code like 'c*' order by Id, Mood desc, Code`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" = $1 AND ("Id"::text COLLATE "C" LIKE $2 ESCAPE '\' AND "Mood"::text COLLATE "C" LIKE $3 ESCAPE '\' AND "Code" COLLATE "C" LIKE $4 ESCAPE '\') ORDER BY "Id" ASC NULLS LAST, "Mood"::text COLLATE "C" DESC NULLS FIRST, "Code" COLLATE "C" ASC NULLS LAST`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" COLLATE BINARY = ? AND ("Id" GLOB ? AND "Mood" GLOB ? AND "Code" GLOB ?) ORDER BY "Id" COLLATE BINARY ASC NULLS LAST, "Mood" COLLATE BINARY DESC NULLS FIRST, "Code" COLLATE BINARY ASC NULLS LAST`},
		{`select Id from Doc where Addr = 'a' and Addr like '*.9' order by Addr`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" = $1 AND (abbrev("Addr") = $2 AND abbrev("Addr") COLLATE "C" LIKE $3 ESCAPE '\') ORDER BY abbrev("Addr") COLLATE "C" ASC NULLS LAST`,
			`SELECT "Id" FROM "Doc" WHERE "Owner" COLLATE BINARY = ? AND ("Addr" COLLATE BINARY = ? AND "Addr" GLOB ?) ORDER BY "Addr" COLLATE BINARY ASC NULLS LAST`},
	}
	const owner = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	opts := Options{Owner: &Owner{Column: "Owner", Value: owner}}
	for _, tt := range tests {
		stmt := mustParse(t, tt.iql)
		for d, want := range map[Dialect]string{PostgreSQL: tt.pg, SQLite: tt.sqlite} {
			got, err := Generate(d, cat, stmt, opts)
			if err != nil {
				t.Fatalf("%s: %s: %v", d, tt.iql, err)
			}
			if got.SQL != want {
				t.Errorf("%s SQL\n got %s\nwant %s", d, got.SQL, want)
			}
		}
	}
	// A uuid owner column takes a subject that is a uuid spelled as PostgreSQL prints
	// one, and no other (SQLite has no uuid type and compares text).
	stmt := mustParse(t, "select Id from Doc")
	for _, v := range []string{strings.ToUpper(owner), "{" + owner + "}", strings.ReplaceAll(owner, "-", ""), "u", owner + " "} {
		_, err := Generate(PostgreSQL, cat, stmt, Options{Owner: &Owner{Column: "Owner", Value: v}})
		if _, ok := err.(*StatementError); !ok {
			t.Errorf("owner %q on a uuid column: %v, want a *StatementError", v, err)
		}
		if _, err := Generate(SQLite, cat, stmt, Options{Owner: &Owner{Column: "Owner", Value: v}}); err != nil {
			t.Errorf("owner %q on SQLite: %v", v, err)
		}
	}
}
