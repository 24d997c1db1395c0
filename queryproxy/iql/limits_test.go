package iql

import (
	"errors"
	"strings"
	"testing"
)

func TestLimits(t *testing.T) {
	small := Limits{MaxBytes: 200, MaxDepth: 3, MaxInList: 3, MaxPredicates: 3, MaxRows: 2,
		MaxColumns: 2, MaxIdentBytes: 5, MaxLiteral: 4, MaxValues: 5}
	tests := []struct {
		name string
		src  string
		ok   bool
		msg  string
	}{
		{"bytes ok", "select * from T where a = '" + strings.Repeat("x", 4) + "'", true, ""},
		{"bytes", "select * from T" + strings.Repeat(" ", 200), false, "statement longer than 200 bytes"},
		{"depth ok", "select * from T where ((not a = 1))", true, ""},
		{"depth parens", "select * from T where ((((a = 1))))", false, "nested deeper than 3"},
		{"depth not", "select * from T where not not not not a = 1", false, "nested deeper than 3"},
		{"depth mixed", "select * from T where (not (not a = 1))", false, "nested deeper than 3"},
		{"depth infix not", "select * from T where (((a not like 'x')))", false, "nested deeper than 3"},
		{"in ok", "select * from T where a in [1,2,3]", true, ""},
		{"in", "select * from T where a in [1,2,3,4]", false, "IN list longer than 3"},
		{"predicates ok", "select * from T where a = 1 or b = 1 or c = 1", true, ""},
		{"predicates", "select * from T where a = 1 or b = 1 or c = 1 or d = 1", false, "more than 3 predicates"},
		{"rows ok", "insert into T (a) values (1), (2)", true, ""},
		{"rows", "insert into T (a) values (1), (2), (3)", false, "more than 2 rows"},
		{"columns ok", "select a, b from T", true, ""},
		{"columns", "select a, b, c from T", false, "more than 2 columns"},
		{"insert columns", "insert into T (a, b, c) values (1, 2, 3)", false, "more than 2 columns"},
		{"set columns", "update T set a = 1, b = 2, c = 3 where a = 1", false, "more than 2 columns"},
		{"order terms", "select * from T order by a, b, c", false, "more than 2 ORDER BY terms"},
		{"ident ok", "select abcde from T", true, ""},
		{"ident", "select abcdef from T", false, "identifier longer than 5 bytes"},
		{"string", "select * from T where a = 'abcde'", false, "string longer than 4 bytes"},
		{"string doubled quotes count once", "select * from T where a = 'a''''b'", true, ""},
		{"number", "select * from T where a = 12345", false, "number longer than 4 bytes"},
		{"values", "insert into T (a) values (1), (2)", true, ""},
		{"values total", "select * from T where a in [1,2] or b in [1,2] or c in [1,2]", false, "more than 5 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src, small)
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse(%q): %v", tt.src, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.src, err, tt.msg)
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Parse(%q) = %v, does not wrap ErrTooLarge", tt.src, err)
			}
		})
	}
}

func TestDefaultLimits(t *testing.T) {
	deep := "select * from T where " + strings.Repeat("(", DefaultMaxDepth) + "a = 1" + strings.Repeat(")", DefaultMaxDepth)
	if _, err := Parse(deep, Limits{}); err != nil {
		t.Fatalf("depth %d: %v", DefaultMaxDepth, err)
	}
	deeper := "select * from T where " + strings.Repeat("(", DefaultMaxDepth+1) + "a = 1" + strings.Repeat(")", DefaultMaxDepth+1)
	if _, err := Parse(deeper, Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("depth %d: %v", DefaultMaxDepth+1, err)
	}
	// A statement of nothing but opening parentheses fails at the bound, not by recursion.
	if _, err := Parse("select * from T where "+strings.Repeat("(", 60000), Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("many parentheses: %v", err)
	}
	big := "select * from T where a = '" + strings.Repeat("x", DefaultMaxBytes) + "'"
	if _, err := Parse(big, Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d bytes: %v", len(big), err)
	}
	in := "select * from T where a in [" + strings.Repeat("1,", DefaultMaxInList) + "1]"
	if _, err := Parse(in, Limits{}); err == nil || !strings.Contains(err.Error(), "IN list longer than 1000") {
		t.Fatalf("IN list of %d: %v", DefaultMaxInList+1, err)
	}
}
