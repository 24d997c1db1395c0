package iql

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func jsonNum(s string) json.Number { return json.Number(s) }

func TestLiteralOf(t *testing.T) {
	tests := []struct {
		in   any
		want Literal
	}{
		{"BHP", str("BHP")},
		{"", str("")},
		{jsonNum("37.480"), num("37.480")},
		{jsonNum("-0"), num("-0")},
		{jsonNum("1e5"), num("100000")},
		{jsonNum("1.5E+3"), num("1500")},
		{jsonNum("1.50e1"), num("15.0")},
		{jsonNum("1e-7"), num("0.0000001")},
		{jsonNum("-12.34e-1"), num("-1.234")},
		{jsonNum("0.5e1"), num("5")},
		{jsonNum("0e5"), num("0")},
		{jsonNum("5e0"), num("5")},
		{37.48, num("37.48")},
		{1e21, num("1000000000000000000000")},
		{int64(-7), num("-7")},
		{42, num("42")},
		{true, BoolLiteral(true)},
		{false, BoolLiteral(false)},
		{nil, NullLiteral()},
	}
	for _, tt := range tests {
		got, err := LiteralOf(tt.in, Limits{})
		if err != nil || got != tt.want {
			t.Errorf("LiteralOf(%#v) = %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct {
		in       any
		msg      string
		tooLarge bool
	}{
		{jsonNum("01"), "not a JSON number", false},
		{jsonNum("1."), "not a JSON number", false},
		{jsonNum("--1"), "not a JSON number", false},
		{jsonNum("+1"), "not a JSON number", false},
		{jsonNum("1e"), "not a JSON number", false},
		{jsonNum("1e+-2"), "not a JSON number", false},
		{jsonNum("0x10"), "not a JSON number", false},
		{jsonNum("1e999999999999"), "longer than", true},
		{jsonNum("1e5000"), "longer than", true},
		{math.NaN(), "finite", false},
		{math.Inf(-1), "finite", false},
		{"a\x00b", "NUL", false},
		{"\xff", "UTF-8", false},
		{strings.Repeat("x", DefaultMaxLiteral+1), "longer than", true},
		{[]any{"a"}, "must be a string, number, boolean or null", false},
		{map[string]any{}, "must be a string, number, boolean or null", false},
	}
	for _, tt := range bad {
		_, err := LiteralOf(tt.in, Limits{})
		if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), tt.msg) || errors.Is(err, ErrTooLarge) != tt.tooLarge {
			t.Errorf("LiteralOf(%.40v) = %v; want an *InvalidError containing %q (too large: %v)", tt.in, err, tt.msg, tt.tooLarge)
		}
	}
}

func TestOperatorByName(t *testing.T) {
	for o := OpEq; o <= OpIsNotNull; o++ {
		for _, name := range []string{o.String(), strings.ToLower(o.String())} {
			if got, ok := OperatorByName(name); !ok || got != o {
				t.Errorf("OperatorByName(%q) = %v, %v", name, got, ok)
			}
		}
	}
	if got, ok := OperatorByName("!="); !ok || got != OpNe {
		t.Errorf(`OperatorByName("!=") = %v, %v`, got, ok)
	}
	for _, name := range []string{"", "IS", "==", "is  null", "LIKE ", "beginſ", "NOT LIKE"} {
		if _, ok := OperatorByName(name); ok {
			t.Errorf("OperatorByName(%q) accepted", name)
		}
	}
}

func TestCriteriaExpr(t *testing.T) {
	tests := []struct {
		name     string
		criteria []Criterion
		want     Expr
	}{
		{"none", nil, nil},
		{"one", []Criterion{{"Code", "=", "BHP"}}, cmp("Code", OpEq, str("BHP"))},
		{"and", []Criterion{{"Code", "BEGINS", "B"}, {"Price", ">=", jsonNum("10")}},
			and(cmp("Code", OpBegins, str("B")), cmp("Price", OpGe, num("10")))},
		{"is null", []Criterion{{"Note", "is", nil}}, cmp("Note", OpIsNull)},
		{"is not null", []Criterion{{"Note", "IS NOT NULL", nil}}, cmp("Note", OpIsNotNull)},
		{"in", []Criterion{{"Code", "IN", []any{"BHP", jsonNum("1"), true}}}, cmp("Code", OpIn, str("BHP"), num("1"), BoolLiteral(true))},
		{"between", []Criterion{{"P", "between", []any{jsonNum("1"), jsonNum("2.5")}}}, cmp("P", OpBetween, num("1"), num("2.5"))},
		{"like", []Criterion{{"Code", "like", "AT*"}}, cmp("Code", OpLike, str("AT*"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CriteriaExpr(tt.criteria, Limits{})
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("CriteriaExpr = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
	bad := []struct {
		name     string
		criteria []Criterion
		msg      string
	}{
		{"unknown operator", []Criterion{{"a", "~", "x"}}, `invalid criteria[0]: unknown operator "~"`},
		{"bad column", []Criterion{{"a", "=", "x"}, {"a b", "=", "x"}}, `invalid criteria[1]: column name "a b" is not an identifier`},
		{"non-ascii column", []Criterion{{"Cöde", "=", "x"}}, "is not an identifier"},
		{"eq null", []Criterion{{"a", "=", nil}}, "= cannot compare with null"},
		{"is value", []Criterion{{"a", "IS", "x"}}, "IS NULL takes no value"},
		{"in scalar", []Criterion{{"a", "IN", "x"}}, "IN needs an array"},
		{"in empty", []Criterion{{"a", "IN", []any{}}}, "IN needs at least one value"},
		{"in null", []Criterion{{"a", "IN", []any{nil}}}, "IN cannot compare with null"},
		{"in nested", []Criterion{{"a", "IN", []any{[]any{"x"}}}}, "must be a string"},
		{"between one", []Criterion{{"a", "BETWEEN", []any{"x"}}}, "BETWEEN needs an array of two"},
		{"between scalar", []Criterion{{"a", "BETWEEN", "x"}}, "BETWEEN needs an array of two"},
		{"like number", []Criterion{{"a", "LIKE", jsonNum("1")}}, "LIKE needs a string, found number"},
		{"array for eq", []Criterion{{"a", "=", []any{"x"}}}, "must be a string, number"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CriteriaExpr(tt.criteria, Limits{})
			if _, ok := errors.AsType[*InvalidError](err); !ok || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("CriteriaExpr = %v; want an *InvalidError containing %q", err, tt.msg)
			}
		})
	}
}

func TestStructuredLimits(t *testing.T) {
	lim := Limits{MaxPredicates: 2, MaxInList: 2, MaxValues: 3, MaxColumns: 2, MaxIdentBytes: 4}
	cases := map[string]func() error{
		"predicates": func() error {
			_, err := CriteriaExpr([]Criterion{{"a", "=", "x"}, {"a", "=", "x"}, {"a", "=", "x"}}, lim)
			return err
		},
		"in list": func() error {
			_, err := CriteriaExpr([]Criterion{{"a", "IN", []any{"x", "y", "z"}}}, lim)
			return err
		},
		"values": func() error {
			_, err := CriteriaExpr([]Criterion{{"a", "IN", []any{"x", "y"}}, {"a", "IN", []any{"x", "y"}}}, lim)
			return err
		},
		"identifier": func() error {
			_, err := CriteriaExpr([]Criterion{{"abcde", "=", "x"}}, lim)
			return err
		},
		"select columns": func() error {
			_, err := NewSelect("T", []string{"a", "b", "c"}, nil, lim)
			return err
		},
		"insert values": func() error {
			_, err := NewInsert("T", []string{"a", "b", "c", "d"}, []any{1, 2, 3, 4}, lim)
			return err
		},
	}
	for name, f := range cases {
		if err := f(); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", name, err)
		}
	}
}

func TestNewSelectAndInsert(t *testing.T) {
	s, err := NewSelect("Security", nil, nil, Limits{})
	if err != nil || !reflect.DeepEqual(s, sel("Security", nil)) {
		t.Fatalf("NewSelect = %#v, %v", s, err)
	}
	if _, err := NewSelect("Security", []string{"a", "A"}, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("duplicate columns: %v", err)
	}
	if _, err := NewSelect("Sec urity", nil, nil, Limits{}); err == nil {
		t.Fatal("bad table name accepted")
	}
	ins, err := NewInsert("Order", []string{"Code", "Qty", "Note"}, []any{"BHP", jsonNum("10"), nil}, Limits{})
	want := &Insert{Table: "Order", Columns: []string{"Code", "Qty", "Note"}, Rows: [][]Literal{{str("BHP"), num("10"), NullLiteral()}}}
	if err != nil || !reflect.DeepEqual(ins, want) {
		t.Fatalf("NewInsert = %#v, %v", ins, err)
	}
	if got := Format(ins); got != "INSERT INTO Order (Code, Qty, Note) VALUES ('BHP', 10, NULL)" {
		t.Fatalf("Format = %s", got)
	}
	for name, f := range map[string]func() (*Insert, error){
		"no columns":   func() (*Insert, error) { return NewInsert("T", nil, nil, Limits{}) },
		"count":        func() (*Insert, error) { return NewInsert("T", []string{"a"}, []any{1, 2}, Limits{}) },
		"bad value":    func() (*Insert, error) { return NewInsert("T", []string{"a"}, []any{[]any{1}}, Limits{}) },
		"dup column":   func() (*Insert, error) { return NewInsert("T", []string{"a", "A"}, []any{1, 2}, Limits{}) },
		"column name":  func() (*Insert, error) { return NewInsert("T", []string{"a;"}, []any{1}, Limits{}) },
		"table name":   func() (*Insert, error) { return NewInsert("", []string{"a"}, []any{1}, Limits{}) },
		"value is NUL": func() (*Insert, error) { return NewInsert("T", []string{"a"}, []any{"\x00"}, Limits{}) },
	} {
		_, err := f()
		if _, ok := errors.AsType[*InvalidError](err); !ok {
			t.Errorf("%s: %v, want an *InvalidError", name, err)
		}
	}
}

func TestAndOf(t *testing.T) {
	a, b := cmp("a", OpIsNull), cmp("b", OpIsNull)
	if AndOf() != nil || AndOf(nil, nil) != nil {
		t.Fatal("AndOf of nothing is not nil")
	}
	if AndOf(nil, a) != a {
		t.Fatal("AndOf of one is not that one")
	}
	if got := AndOf(a, nil, b); !reflect.DeepEqual(got, and(a, b)) {
		t.Fatalf("AndOf = %#v", got)
	}
}

// TestWrittenOutBound: a structured statement's numbers, exponents written
// out, grow it by at most MaxBytes in all (413), however short the JSON
// that gave them: 16 numbers "1e4095" (4,096 digits each, 4,090 more than
// their JSON) are 65,440 bytes of growth, 17 are over the bound. Strings,
// which grow nothing, are bounded by the body alone: a bulk insert of
// values longer than MaxBytes in all is no more refused.
func TestWrittenOutBound(t *testing.T) {
	lim := Limits{}.withDefaults()
	nums := func(n int) []any {
		var vs []any
		for range n {
			vs = append(vs, jsonNum("1e4095"))
		}
		return vs
	}
	if _, err := CriteriaExpr([]Criterion{{ColumnName: "Price", Operator: "IN", Value: nums(16)}}, lim); err != nil {
		t.Fatalf("16 long numbers: %v", err)
	}
	for _, crit := range [][]Criterion{
		{{ColumnName: "Price", Operator: "IN", Value: nums(17)}},
		{{ColumnName: "Price", Operator: "IN", Value: nums(9)}, {ColumnName: "Price", Operator: "IN", Value: nums(8)}},
		slices.Repeat([]Criterion{{ColumnName: "Price", Operator: "=", Value: jsonNum("1e4095")}}, 17),
	} {
		if _, err := CriteriaExpr(crit, lim); !errors.Is(err, ErrTooLarge) {
			t.Errorf("criteria that grow by %d bytes written out: %v, want ErrTooLarge", 17*4090, err)
		}
	}
	cols := make([]string, 17)
	for i := range cols {
		cols[i] = "C" + strconv.Itoa(i)
	}
	if _, err := NewInsert("T", cols, nums(17), lim); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an insert that grows by %d bytes written out: %v, want ErrTooLarge", 17*4090, err)
	}
	var oneEach [][]any
	for range 17 {
		oneEach = append(oneEach, nums(1))
	}
	if _, err := NewInsertRows("T", cols[:1], oneEach, lim); !errors.Is(err, ErrTooLarge) {
		t.Errorf("17 rows of one long number: %v, want ErrTooLarge (the bound is the statement's)", err)
	}
	if _, err := NewInsert("T", cols[:16], nums(16), lim); err != nil {
		t.Errorf("an insert of 16 long numbers: %v", err)
	}
	// A decoder without UseNumber gives float64s: their growth counts too.
	floats := slices.Repeat([]any{1e308}, 220)
	if _, err := CriteriaExpr([]Criterion{{ColumnName: "Price", Operator: "IN", Value: floats}}, lim); !errors.Is(err, ErrTooLarge) {
		t.Errorf("220 floats 1e308 (309 digits each) written out: %v, want ErrTooLarge", err)
	}
	long := strings.Repeat("x", 4000)
	var rows [][]any
	for range 40 {
		rows = append(rows, []any{long, jsonNum("37.48")})
	}
	if _, err := NewInsertRows("T", cols[:2], rows, lim); err != nil {
		t.Errorf("40 rows of 4,000-byte strings (160 KB, no growth): %v", err)
	}
}
