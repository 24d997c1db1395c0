package sqlgen

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// quoteCatalog is a market-data table whose rows name their venue, with an owner column
// for the case of both.
var quoteCatalog = Catalog{Tables: []Table{{Name: "Quote", Columns: []Column{
	{Name: "Id", Type: Integer}, {Name: "Code", Type: String}, {Name: "Venue", Type: String},
	{Name: "Owner", Type: String}, {Name: "Price", Type: Decimal}, {Name: "Key", Type: String, Text: TextUUID},
}}}}

// TestGoldenVenue: the venue filter as each dialect writes it, before the statement's
// condition and in AND with it, the condition in parentheses. It failed when the
// condition was written without its parentheses ("OR" escaped the filter) and when the
// filter was left out of UPDATE.
func TestGoldenVenue(t *testing.T) {
	held := func(null bool, vs ...string) Options {
		return Options{Venue: &Venue{Column: "venue", Held: vs, Null: null}}
	}
	tests := []struct {
		name, iql    string
		opts         Options
		sqlite, pg   string
		lArgs, pArgs []any
	}{
		{"select", "select Code from Quote", held(false, "ASX", "NZX"),
			`SELECT "Code" FROM "Quote" WHERE "Venue" COLLATE BINARY IN (?, ?)`,
			`SELECT "Code" FROM "Quote" WHERE "Venue" IN ($1, $2)`, []any{"ASX", "NZX"}, []any{"ASX", "NZX"}},
		{"or stays inside", "select Code from Quote where Code = 'A' or Venue = 'NZX'", held(false, "ASX"),
			`SELECT "Code" FROM "Quote" WHERE "Venue" COLLATE BINARY IN (?) AND ("Code" COLLATE BINARY = ? OR "Venue" COLLATE BINARY = ?)`,
			`SELECT "Code" FROM "Quote" WHERE "Venue" IN ($1) AND ("Code" = $2 OR "Venue" = $3)`,
			[]any{"ASX", "A", "NZX"}, []any{"ASX", "A", "NZX"}},
		{"null visible", "select Code from Quote where not (Code = 'A')", held(true, "ASX", "NZX"),
			`SELECT "Code" FROM "Quote" WHERE ("Venue" COLLATE BINARY IN (?, ?) OR "Venue" IS NULL) AND (NOT ("Code" COLLATE BINARY = ?))`,
			`SELECT "Code" FROM "Quote" WHERE ("Venue" IN ($1, $2) OR "Venue" IS NULL) AND (NOT ("Code" = $3))`,
			[]any{"ASX", "NZX", "A"}, []any{"ASX", "NZX", "A"}},
		{"no venue", "select Code from Quote where Code = 'A'", held(false),
			`SELECT "Code" FROM "Quote" WHERE 0 = 1 AND ("Code" COLLATE BINARY = ?)`,
			`SELECT "Code" FROM "Quote" WHERE 0 = 1 AND ("Code" = $1)`, []any{"A"}, []any{"A"}},
		{"null only", "select Code from Quote", held(true),
			`SELECT "Code" FROM "Quote" WHERE "Venue" IS NULL`, `SELECT "Code" FROM "Quote" WHERE "Venue" IS NULL`, nil, nil},
		{"owner, venue, row check and limit", "select Code from Quote where Code = 'A' or Code = 'B'",
			Options{Owner: &Owner{Column: "Owner", Value: "u1"}, Venue: &Venue{Column: "Venue", Held: []string{"ASX"}}, MaxRows: 9, RowCheck: "rc"},
			`SELECT "Code" FROM "Quote" WHERE rc(?) AND ("Owner" COLLATE BINARY = ? AND "Venue" COLLATE BINARY IN (?) AND ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?)) LIMIT ?`,
			`SELECT "Code" FROM "Quote" WHERE rc($1) AND ("Owner" = $2 AND "Venue" IN ($3) AND ("Code" = $4 OR "Code" = $5)) LIMIT $6`,
			[]any{RowCheckArg{}, "u1", "ASX", "A", "B", int64(10)}, []any{RowCheckArg{}, "u1", "ASX", "A", "B", int64(10)}},
		{"update", "update Quote set Price = 1 where Code = 'A' or Code = 'B'", held(false, "ASX"),
			`UPDATE "Quote" SET "Price" = ? WHERE "Venue" COLLATE BINARY IN (?) AND ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?)`,
			`UPDATE "Quote" SET "Price" = $1 WHERE "Venue" IN ($2) AND ("Code" = $3 OR "Code" = $4)`,
			[]any{int64(1), "ASX", "A", "B"}, []any{int64(1), "ASX", "A", "B"}},
		{"delete", "delete from Quote where Id = 1", held(true, "ASX"),
			`DELETE FROM "Quote" WHERE ("Venue" COLLATE BINARY IN (?) OR "Venue" IS NULL) AND ("Id" = ?)`,
			`DELETE FROM "Quote" WHERE ("Venue" IN ($1) OR "Venue" IS NULL) AND ("Id" = $2)`,
			[]any{"ASX", int64(1)}, []any{"ASX", int64(1)}},
		{"insert has no filter", "insert into Quote (Code, Venue) values ('A', 'ASX')", held(false, "ASX"),
			`INSERT INTO "Quote" ("Code", "Venue") VALUES (?, ?)`, `INSERT INTO "Quote" ("Code", "Venue") VALUES ($1, $2)`,
			[]any{"A", "ASX"}, []any{"A", "ASX"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt := mustParse(t, tt.iql)
			for d, want := range map[Dialect]struct {
				sql  string
				args []any
			}{SQLite: {tt.sqlite, tt.lArgs}, PostgreSQL: {tt.pg, tt.pArgs}} {
				got, err := Generate(d, quoteCatalog, stmt, tt.opts)
				if err != nil {
					t.Fatalf("%s: %v", d, err)
				}
				if got.SQL != want.sql || !reflect.DeepEqual(got.Args, want.args) {
					t.Errorf("%s\n got %s %#v\nwant %s %#v", d, got.SQL, got.Args, want.sql, want.args)
				}
			}
		})
	}
}

// TestVenueColumnRefused: a venue column the table lacks, or one that is not compared by
// its text, is a configuration error, on every statement but an insert.
func TestVenueColumnRefused(t *testing.T) {
	stmt := mustParse(t, "select Code from Quote")
	for _, col := range []string{"Nope", "Price", "Key"} {
		_, err := Generate(PostgreSQL, quoteCatalog, stmt, Options{Venue: &Venue{Column: col, Held: []string{"ASX"}}})
		var se *StatementError
		if err == nil || errors.As(err, &se) {
			t.Errorf("venue column %s: %v, want a configuration error", col, err)
		}
		if _, err := FilterVenue(quoteCatalog.Tables[0], stmt, Venue{Column: col, Held: []string{"ASX"}}); err == nil {
			t.Errorf("FilterVenue with venue column %s: no error", col)
		}
	}
}

// TestFilterVenue: the filter in IQL, first, its terms in AND with the statement's; the
// caller's statement unchanged. It failed when an OR condition was appended to the
// filter's AND as terms (the OR escaped it).
func TestFilterVenue(t *testing.T) {
	tb := quoteCatalog.Tables[0]
	asx := Venue{Column: "venue", Held: []string{"ASX"}}
	all := Venue{Column: "VENUE", Held: []string{"ASX", "NZX"}, Null: true}
	for _, tt := range []struct {
		src  string
		v    Venue
		want string
	}{
		{"select Code from Quote", asx, `SELECT Code FROM Quote WHERE Venue IN ['ASX']`},
		{"select Code from Quote where Code = 'A' and Price > 1", asx, `SELECT Code FROM Quote WHERE Venue IN ['ASX'] AND Code = 'A' AND Price > 1`},
		{"select Code from Quote where Code = 'A' or Venue = 'NZX'", asx, `SELECT Code FROM Quote WHERE Venue IN ['ASX'] AND (Code = 'A' OR Venue = 'NZX')`},
		{"select Code from Quote", all, `SELECT Code FROM Quote WHERE Venue IN ['ASX', 'NZX'] OR Venue IS NULL`},
		{"select Code from Quote where Code = 'A'", all, `SELECT Code FROM Quote WHERE (Venue IN ['ASX', 'NZX'] OR Venue IS NULL) AND Code = 'A'`},
		{"select Code from Quote where Code = 'A'", Venue{Column: "Venue", Null: true}, `SELECT Code FROM Quote WHERE Venue IS NULL AND Code = 'A'`},
		{"delete from Quote where Id = 1", asx, `DELETE FROM Quote WHERE Venue IN ['ASX'] AND Id = 1`},
		{"insert into Quote (Venue) values ('NZX')", asx, `INSERT INTO Quote (Venue) VALUES ('NZX')`},
	} {
		stmt := mustParse(t, tt.src)
		before := iql.Format(stmt)
		got, err := FilterVenue(tb, stmt, tt.v)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if s := iql.Format(got); s != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.src, s, tt.want)
		}
		if iql.Format(stmt) != before {
			t.Errorf("%s: FilterVenue changed the statement", tt.src)
		}
	}
	if _, err := FilterVenue(tb, mustParse(t, "select Code from Quote"), Venue{Column: "Venue"}); !errors.Is(err, ErrNoVenue) {
		t.Errorf("no venue held: %v, want ErrNoVenue", err)
	}
}
