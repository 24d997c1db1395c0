package iql

import (
	"reflect"
	"testing"
)

func TestColumns(t *testing.T) {
	tests := []struct {
		src  string
		want []ColumnRef
	}{
		{"select * from T", nil},
		{"select a, b from T where c = 1 or not (d is null and a = 2) order by e desc",
			[]ColumnRef{{"a", UseSelect}, {"b", UseSelect}, {"c", UseWhere}, {"d", UseWhere}, {"a", UseWhere}, {"e", UseOrder}}},
		{"insert into T (a, b) values (1, 2)", []ColumnRef{{"a", UseInsert}, {"b", UseInsert}}},
		{"update T set a = 1 where b in [1]", []ColumnRef{{"a", UseSet}, {"b", UseWhere}}},
		{"delete from T where b not like 'x'", []ColumnRef{{"b", UseWhere}}},
	}
	for _, tt := range tests {
		stmt, err := Parse(tt.src, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := Columns(stmt); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Columns(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
	if !UseSet.Writes() || !UseInsert.Writes() || UseWhere.Writes() || UseSelect.Writes() || UseOrder.Writes() {
		t.Error("Use.Writes is wrong")
	}
}

func TestInspectSkipsChildren(t *testing.T) {
	e := or(not(cmp("a", OpIsNull)), cmp("b", OpIsNull))
	var seen []string
	Inspect(e, func(x Expr) bool {
		if c, ok := x.(*Compare); ok {
			seen = append(seen, c.Column)
		}
		_, isNot := x.(*Not)
		return !isNot
	})
	if !reflect.DeepEqual(seen, []string{"b"}) {
		t.Fatalf("seen %v", seen)
	}
}

func TestCheck(t *testing.T) {
	ok := cmp("a", OpEq, num("1"))
	bad := []struct {
		name string
		stmt Statement
	}{
		{"nil", nil},
		{"nil select", (*Select)(nil)},
		{"table", &Select{Table: "a b"}},
		{"duplicate columns", &Select{Table: "T", Columns: []string{"a", "A"}}},
		{"order column", &Select{Table: "T", OrderBy: []OrderTerm{{Column: ""}}}},
		{"negative limit", &Select{Table: "T", Limit: limit(-1)}},
		{"and of one", sel("T", and(ok))},
		{"nil term", sel("T", and(ok, nil))},
		{"nil not", sel("T", not(nil))},
		{"typed nil compare", sel("T", (*Compare)(nil))},
		{"bad op", sel("T", cmp("a", Op(99), num("1")))},
		{"no value", sel("T", cmp("a", OpEq))},
		{"two values", sel("T", cmp("a", OpEq, num("1"), num("2")))},
		{"between one", sel("T", cmp("a", OpBetween, num("1")))},
		{"in none", sel("T", cmp("a", OpIn))},
		{"is null value", sel("T", cmp("a", OpIsNull, num("1")))},
		{"null value", sel("T", cmp("a", OpEq, NullLiteral()))},
		{"like number", sel("T", cmp("a", OpLike, num("1")))},
		{"zero literal", sel("T", cmp("a", OpEq, Literal{}))},
		{"bad number", sel("T", cmp("a", OpEq, Literal{Kind: KindNumber, Text: "1e5"}))},
		{"bool with text", sel("T", cmp("a", OpEq, Literal{Kind: KindBool, Text: "x"}))},
		{"string with NUL", sel("T", cmp("a", OpEq, str("\x00")))},
		{"insert no columns", &Insert{Table: "T"}},
		{"insert no rows", &Insert{Table: "T", Columns: []string{"a"}}},
		{"insert short row", &Insert{Table: "T", Columns: []string{"a", "b"}, Rows: [][]Literal{{num("1")}}}},
		{"update no set", &Update{Table: "T", Where: ok}},
		{"update no where", &Update{Table: "T", Set: []Assignment{{"a", num("1")}}}},
		{"update dup", &Update{Table: "T", Set: []Assignment{{"a", num("1")}, {"A", num("1")}}, Where: ok}},
		{"delete no where", &Delete{Table: "T"}},
	}
	for _, tt := range bad {
		if err := Check(tt.stmt); err == nil {
			t.Errorf("%s: Check accepted %#v", tt.name, tt.stmt)
		}
	}
	good := []Statement{
		sel("T", ok), &Delete{Table: "T", Where: ok},
		&Insert{Table: "T", Columns: []string{"a"}, Rows: [][]Literal{{NullLiteral()}}},
		&Update{Table: "T", Set: []Assignment{{"a", NullLiteral()}}, Where: not(ok)},
	}
	for _, s := range good {
		if err := Check(s); err != nil {
			t.Errorf("Check(%s): %v", Format(s), err)
		}
	}
}
