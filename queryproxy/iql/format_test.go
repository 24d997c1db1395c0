package iql

import (
	"reflect"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct{ src, want string }{
		{"select * from Security", "SELECT * FROM Security"},
		{`select code,Price from security where Code = "BHP"`, "SELECT code, Price FROM security WHERE Code = 'BHP'"},
		{`select * from T where a = "it's" or b = 'say "hi"'`, `SELECT * FROM T WHERE a = "it's" OR b = 'say "hi"'`},
		{"select * from T where a != -1.50", "SELECT * FROM T WHERE a <> -1.50"},
		{"select * from T where a in (1, 'x', true)", "SELECT * FROM T WHERE a IN [1, 'x', TRUE]"},
		{"select * from T where a between 1 and 2 and b is not null", "SELECT * FROM T WHERE a BETWEEN 1 AND 2 AND b IS NOT NULL"},
		{"select * from T where a not like 'x*'", "SELECT * FROM T WHERE NOT a LIKE 'x*'"},
		{"select * from T where (a = 1 or b = 2) and not (c = 3 and d = 4)", "SELECT * FROM T WHERE (a = 1 OR b = 2) AND NOT (c = 3 AND d = 4)"},
		{"select * from T where a = 1 or (b = 2 or c = 3)", "SELECT * FROM T WHERE a = 1 OR (b = 2 OR c = 3)"},
		{"select * from T where a = 1 or b = 2 and c = 3", "SELECT * FROM T WHERE a = 1 OR b = 2 AND c = 3"},
		{"select * from T where not not Not = 1", "SELECT * FROM T WHERE NOT NOT Not = 1"},
		{"select a from T order by a asc, b desc limit 5;", "SELECT a FROM T ORDER BY a, b DESC LIMIT 5"},
		{"insert into T (a,b) values (1,null),('x',false)", "INSERT INTO T (a, b) VALUES (1, NULL), ('x', FALSE)"},
		{"update T set a=null where b begins 'x'", "UPDATE T SET a = NULL WHERE b BEGINS 'x'"},
		{"delete from T where b contains ''''", `DELETE FROM T WHERE b CONTAINS "'"`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			stmt, err := Parse(tt.src, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got := Format(stmt); got != tt.want {
				t.Fatalf("Format = %s\n          want %s", got, tt.want)
			}
		})
	}
}

// TestFormatInvalidNames checks that a hand-built AST cannot smuggle text through Format.
func TestFormatInvalidNames(t *testing.T) {
	stmt := &Select{
		Table:   "T where 1 = 1 --",
		Columns: []string{"a, b"},
		Where:   cmp("x' OR 'a' = 'a", OpEq, str("v' OR 'a' = 'a")),
	}
	got := Format(stmt)
	want := `SELECT <invalid identifier> FROM <invalid identifier> WHERE <invalid identifier> = "v' OR 'a' = 'a"`
	if got != want {
		t.Fatalf("Format = %s\n          want %s", got, want)
	}
	if _, err := Parse(got, Limits{}); err == nil {
		t.Fatal("the text of an invalid AST parses")
	}
}

// TestFormatBuilt checks the canonical text of ASTs that the structured endpoints build.
func TestFormatBuilt(t *testing.T) {
	where, err := CriteriaExpr([]Criterion{
		{"Code", "in", []any{"BHP", "ANZ"}},
		{"Price", "between", []any{1.5, jsonNum("2e1")}},
		{"Name", "IS NOT", nil},
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSelect("Security", []string{"Code"}, where, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := Format(s)
	want := "SELECT Code FROM Security WHERE Code IN ['BHP', 'ANZ'] AND Price BETWEEN 1.5 AND 20 AND Name IS NOT NULL"
	if got != want {
		t.Fatalf("Format = %s\n          want %s", got, want)
	}
	back, err := Parse(got, Limits{})
	if err != nil || !reflect.DeepEqual(back, Statement(s)) {
		t.Fatalf("Parse(Format(built)) = %#v, %v", back, err)
	}
}
