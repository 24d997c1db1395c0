package sqlgen

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name    string
		iql     string
		opts    Options
		unknown *UnknownError // want this *UnknownError
		stmtMsg string        // else want a *StatementError containing this
	}{
		{"unknown table", "select * from Nope", Options{}, &UnknownError{Kind: "table", Name: "Nope"}, ""},
		{"unknown column in list", "select Code, Nope from Security", Options{}, &UnknownError{Kind: "column", Name: "Nope", Table: "Security"}, ""},
		{"unknown column in where", "select * from security where nope = 1", Options{}, &UnknownError{Kind: "column", Name: "nope", Table: "Security"}, ""},
		{"unknown column in order", "select * from Security order by Nope", Options{}, &UnknownError{Kind: "column", Name: "Nope", Table: "Security"}, ""},
		{"unknown column in set", "update Security set Nope = 1 where Code = 'x'", Options{}, &UnknownError{Kind: "column", Name: "Nope", Table: "Security"}, ""},
		{"unknown column in insert", "insert into Security (Nope) values (1)", Options{}, &UnknownError{Kind: "column", Name: "Nope", Table: "Security"}, ""},
		{"column of another table", "select Headline from Security", Options{}, &UnknownError{Kind: "column", Name: "Headline", Table: "Security"}, ""},
		{"like on a number", "select * from Security where Price like '1*'", Options{}, nil, `LIKE needs a String column; "Price" is Decimal`},
		{"begins on a time", "select * from News where Published begins '2024'", Options{}, nil, "BEGINS needs a String column"},
		{"number for a Boolean", "select * from Security where Active = 1", Options{}, nil, `column "Active" is Boolean; it takes TRUE or FALSE, not a number`},
		{"string for a Boolean", "select * from Security where Active in ['true']", Options{}, nil, `not a string`},
		{"boolean for a Decimal", "select * from Security where Price between true and 2", Options{}, nil, `column "Price" is Decimal; it cannot take a boolean`},
		{"boolean for a String in SET", "update Security set Name = true where Code = 'x'", Options{}, nil, `column "Name" is String; it cannot take a boolean`},
		{"boolean for a DateTime in INSERT", "insert into News (Published) values (false)", Options{}, nil, "cannot take a boolean"},
		{"number for a DateTime", "select * from News where Published = 123", Options{}, nil, `column "Published" is DateTime; it cannot take a number`},
		{"number for a DateTime in BETWEEN", "select * from News where Published between 1 and 2", Options{}, nil, "cannot take a number"},
		{"number for a DateTime in INSERT", "insert into News (Published) values (20260101)", Options{}, nil, "cannot take a number"},
		{"owner in insert", "insert into Order (Code, owner) values ('x', 'user-2')", owner1, nil, `column "Owner" holds the row's owner`},
		{"owner in set", "update Order set Owner = 'user-2' where Id = 1", owner1, nil, `column "Owner" holds the row's owner`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt := mustParse(t, tt.iql)
			for _, d := range []Dialect{SQLite, PostgreSQL} {
				_, err := Generate(d, testCatalog, stmt, tt.opts)
				ue, isUnknown := errors.AsType[*UnknownError](err)
				se, isStatement := errors.AsType[*StatementError](err)
				switch {
				case tt.unknown != nil:
					if !isUnknown || !reflect.DeepEqual(ue, tt.unknown) {
						t.Fatalf("%s: %v, want %#v", d, err, tt.unknown)
					}
				case !isStatement || !strings.Contains(se.Msg, tt.stmtMsg):
					t.Fatalf("%s: %v, want a *StatementError containing %q", d, err, tt.stmtMsg)
				}
			}
		})
	}
}

func TestUnknownErrorText(t *testing.T) {
	if got := (&UnknownError{Kind: "table", Name: "X"}).Error(); got != `unknown table "X"` {
		t.Error(got)
	}
	if got := (&UnknownError{Kind: "column", Name: "c", Table: "T"}).Error(); got != `unknown column "c" in table "T"` {
		t.Error(got)
	}
}

// TestDuplicateColumns checks that one column cannot be named twice, whatever the case.
func TestDuplicateColumns(t *testing.T) {
	s := &iql.Select{Table: "Security", Columns: []string{"Code", "code"}}
	if _, err := Generate(SQLite, testCatalog, s, Options{}); err == nil {
		t.Fatal("duplicate select columns accepted")
	}
	// A catalog with two spellings of one name resolves both to the first.
	cat := Catalog{Tables: []Table{{Name: "T", Columns: []Column{{Name: "a", Type: String}}}}}
	ins := &iql.Insert{Table: "T", Columns: []string{"a"}, Rows: [][]iql.Literal{{iql.NullLiteral()}}}
	if _, err := Generate(SQLite, cat, ins, Options{Owner: &Owner{Column: "A", Value: "u"}}); err == nil {
		t.Fatal("insert naming the owner column in another case accepted")
	}
}

func TestGenerateCallerErrors(t *testing.T) {
	good := mustParse(t, "select * from Order")
	cases := map[string]func() error{
		"unknown dialect": func() error { _, err := Generate("mysql", testCatalog, good, Options{}); return err },
		"invalid AST": func() error {
			_, err := Generate(SQLite, testCatalog, &iql.Select{Table: "Order", Where: &iql.And{}}, Options{})
			return err
		},
		"nil statement": func() error { _, err := Generate(SQLite, testCatalog, nil, Options{}); return err },
		"owner column missing": func() error {
			_, err := Generate(SQLite, testCatalog, mustParse(t, "select * from Security"), owner1)
			return err
		},
		"table without columns": func() error {
			cat := Catalog{Tables: []Table{{Name: "Empty"}}}
			_, err := Generate(SQLite, cat, mustParse(t, "select * from Empty"), Options{})
			return err
		},
		"unquotable catalog name": func() error {
			cat := Catalog{Tables: []Table{{Name: "T", Columns: []Column{{Name: "a\x00", Type: String}}}}}
			_, err := Generate(SQLite, cat, mustParse(t, "select * from T"), Options{})
			return err
		},
	}
	for name, f := range cases {
		err := f()
		_, unknown := errors.AsType[*UnknownError](err)
		_, statement := errors.AsType[*StatementError](err)
		if err == nil || unknown || statement {
			t.Errorf("%s: %v, want a plain error (the caller's fault, not the client's)", name, err)
		}
	}
}

func TestTooManyArgs(t *testing.T) {
	lim := iql.Limits{MaxRows: 20000, MaxValues: 40000}
	var b strings.Builder
	b.WriteString("insert into News (Id, Headline) values ")
	for i := 0; i < 16400; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("(1,'x')")
	}
	stmt, err := iql.Parse(b.String(), iql.Limits{MaxBytes: 1 << 20, MaxRows: lim.MaxRows, MaxValues: lim.MaxValues})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Generate(SQLite, testCatalog, stmt, Options{})
	if _, ok := errors.AsType[*StatementError](err); !ok || !errors.Is(err, iql.ErrTooLarge) {
		t.Fatalf("SQLite: %v, want a *StatementError wrapping iql.ErrTooLarge", err)
	}
	if _, err := Generate(PostgreSQL, testCatalog, stmt, Options{}); err != nil {
		t.Fatalf("PostgreSQL takes 32800 arguments: %v", err)
	}
}

func TestQuotedCatalogNames(t *testing.T) {
	// IQL cannot write such a name (identifiers are bare), but a catalog may hold one and
	// "*" writes it out, so it must be quoted correctly: inner " doubled.
	cat := Catalog{Tables: []Table{{Name: "T", Columns: []Column{{Name: `co"l`, Type: String}, {Name: `x""`, Type: String}}}}}
	got, err := Generate(PostgreSQL, cat, &iql.Select{Table: "t"}, Options{})
	if err != nil || got.SQL != `SELECT "co""l", "x""""" FROM "T"` {
		t.Fatalf("got %q, %v", got.SQL, err)
	}
	if !reflect.DeepEqual(got.Columns, cat.Tables[0].Columns) {
		t.Fatalf("Columns = %v", got.Columns)
	}
	g := &gen{}
	g.ident(`we"ird`)
	if g.b.String() != `"we""ird"` {
		t.Fatalf("ident = %s", g.b.String())
	}
}

func TestResultColumns(t *testing.T) {
	got, err := Generate(SQLite, testCatalog, mustParse(t, "select price, CODE from security"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Column{{Name: "Price", Type: Decimal}, {Name: "Code", Type: String}}
	if !reflect.DeepEqual(got.Columns, want) {
		t.Fatalf("Columns = %v, want %v", got.Columns, want)
	}
	got, err = Generate(SQLite, testCatalog, mustParse(t, "delete from News where Id = 1"), Options{})
	if err != nil || got.Columns != nil {
		t.Fatalf("DELETE Columns = %v, %v", got.Columns, err)
	}
}

// TestRowCheck: a SELECT's WHERE calls Options.RowCheck first, with a RowCheckArg, and
// keeps the rest together in parentheses (an OR stays under the check and the owner
// predicate); a SELECT without a WHERE, and other statements, have no call; a name that is
// not a plain one is refused.
func TestRowCheck(t *testing.T) {
	for _, tt := range []struct {
		stmt string
		opts Options
		sql  string
	}{
		{"select Code from Security", Options{RowCheck: "chk"}, `SELECT "Code" FROM "Security"`},
		{"select Code from Security where Code = 'a' or Code = 'b'", Options{RowCheck: "chk"},
			`SELECT "Code" FROM "Security" WHERE chk(?) AND ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?)`},
		{"select Code from Order where Code = 'a' or Code = 'b'", Options{RowCheck: "chk", Owner: owner1.Owner},
			`SELECT "Code" FROM "Order" WHERE chk(?) AND ("Owner" COLLATE BINARY = ? AND ("Code" COLLATE BINARY = ? OR "Code" COLLATE BINARY = ?))`},
		{"delete from News where Id = 1", Options{RowCheck: "chk"}, `DELETE FROM "News" WHERE "Id" = ?`},
	} {
		st, err := Generate(SQLite, testCatalog, mustParse(t, tt.stmt), tt.opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.stmt, err)
		}
		if st.SQL != tt.sql {
			t.Errorf("%s:\n got %s\nwant %s", tt.stmt, st.SQL, tt.sql)
		}
		if strings.Contains(tt.sql, "chk(?)") && st.Args[0] != (RowCheckArg{}) {
			t.Errorf("%s: first argument %#v, want RowCheckArg", tt.stmt, st.Args[0])
		}
	}
	for _, name := range []string{"chk()", `"chk"`, "1chk", "chk;drop", ""} {
		_, err := Generate(SQLite, testCatalog, mustParse(t, "select Code from Security"), Options{RowCheck: name})
		if (err == nil) != (name == "") {
			t.Errorf("row check %q: %v", name, err)
		}
	}
}
