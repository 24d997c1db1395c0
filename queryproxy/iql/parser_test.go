package iql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Statement
	}{
		{"star", "select * from Security", sel("Security", nil)},
		{"columns", "SELECT Code, Price FROM Security", sel("Security", nil, "Code", "Price")},
		{"semicolon and space", "select * from T ;  \n", sel("T", nil)},
		{"eq single quotes", "select * from T where Code = 'BHP'", sel("T", cmp("Code", OpEq, str("BHP")))},
		{"eq double quotes", `select * from T where Code = "BHP"`, sel("T", cmp("Code", OpEq, str("BHP")))},
		{"doubled single quote", `select * from T where N = 'it''s'`, sel("T", cmp("N", OpEq, str("it's")))},
		{"doubled double quote", `select * from T where N = "say ""hi"""`, sel("T", cmp("N", OpEq, str(`say "hi"`)))},
		{"other quote inside", `select * from T where N = "it's"`, sel("T", cmp("N", OpEq, str("it's")))},
		{"empty string", `select * from T where N = ''`, sel("T", cmp("N", OpEq, str("")))},
		{"unicode string", `select * from T where N = 'Zürich ✓'`, sel("T", cmp("N", OpEq, str("Zürich ✓")))},
		{"ne", "select * from T where a <> 1", sel("T", cmp("a", OpNe, num("1")))},
		{"ne bang", "select * from T where a != 1", sel("T", cmp("a", OpNe, num("1")))},
		{"lt", "select * from T where a < -1.50", sel("T", cmp("a", OpLt, num("-1.50")))},
		{"le", "select * from T where a <= 007", sel("T", cmp("a", OpLe, num("007")))},
		{"gt", "select * from T where a>2", sel("T", cmp("a", OpGt, num("2")))},
		{"ge", "select * from T where a >= 0.0", sel("T", cmp("a", OpGe, num("0.0")))},
		{"true", "select * from T where a = true", sel("T", cmp("a", OpEq, BoolLiteral(true)))},
		{"false", "select * from T where a = FALSE", sel("T", cmp("a", OpEq, BoolLiteral(false)))},
		{"is null", "select * from T where a is null", sel("T", cmp("a", OpIsNull))},
		{"is not null", "select * from T where a IS NOT NULL", sel("T", cmp("a", OpIsNotNull))},
		{"begins", "select * from T where a BEGINS 'BH'", sel("T", cmp("a", OpBegins, str("BH")))},
		{"contains", "select * from T where a contains 'H'", sel("T", cmp("a", OpContains, str("H")))},
		{"like", "select * from T where a LIKE 'AT*'", sel("T", cmp("a", OpLike, str("AT*")))},
		{"not like", "select * from T where a NOT LIKE 'AT*'", sel("T", not(cmp("a", OpLike, str("AT*"))))},
		{"in brackets", `select * from T where a IN ["BHP","ANZ"]`, sel("T", cmp("a", OpIn, str("BHP"), str("ANZ")))},
		{"in parens", `select * from T where a in (1, 2.5, true)`, sel("T", cmp("a", OpIn, num("1"), num("2.5"), BoolLiteral(true)))},
		{"not in", `select * from T where a not in [1]`, sel("T", not(cmp("a", OpIn, num("1"))))},
		{"between", "select * from T where a between 1 and 2", sel("T", cmp("a", OpBetween, num("1"), num("2")))},
		{"not between", "select * from T where a NOT BETWEEN 'a' AND 'b'", sel("T", not(cmp("a", OpBetween, str("a"), str("b"))))},
		{"between then and", "select * from T where a between 1 and 2 and b = 3",
			sel("T", and(cmp("a", OpBetween, num("1"), num("2")), cmp("b", OpEq, num("3"))))},
		{"and flattens", "select * from T where a = 1 and b = 2 and c = 3",
			sel("T", and(cmp("a", OpEq, num("1")), cmp("b", OpEq, num("2")), cmp("c", OpEq, num("3"))))},
		{"and binds tighter than or", "select * from T where a = 1 or b = 2 and c = 3",
			sel("T", or(cmp("a", OpEq, num("1")), and(cmp("b", OpEq, num("2")), cmp("c", OpEq, num("3")))))},
		{"parens override", "select * from T where (a = 1 or b = 2) and c = 3",
			sel("T", and(or(cmp("a", OpEq, num("1")), cmp("b", OpEq, num("2"))), cmp("c", OpEq, num("3"))))},
		{"explicit nested and kept", "select * from T where a = 1 and (b = 2 and c = 3)",
			sel("T", and(cmp("a", OpEq, num("1")), and(cmp("b", OpEq, num("2")), cmp("c", OpEq, num("3")))))},
		{"redundant parens vanish", "select * from T where ((a = 1))", sel("T", cmp("a", OpEq, num("1")))},
		{"not binds tighter than and", "select * from T where not a = 1 and b = 2",
			sel("T", and(not(cmp("a", OpEq, num("1"))), cmp("b", OpEq, num("2"))))},
		{"not of parens", "select * from T where not (a = 1 or b = 2)",
			sel("T", not(or(cmp("a", OpEq, num("1")), cmp("b", OpEq, num("2")))))},
		{"not not", "select * from T where not not a = 1", sel("T", not(not(cmp("a", OpEq, num("1")))))},
		{"order by", "select * from T order by a, b desc, c asc",
			&Select{Table: "T", OrderBy: []OrderTerm{{"a", false}, {"b", true}, {"c", false}}}},
		{"limit", "select a from T where a > 1 order by a limit 10",
			&Select{Table: "T", Columns: []string{"a"}, Where: cmp("a", OpGt, num("1")), OrderBy: []OrderTerm{{"a", false}}, Limit: limit(10)}},
		{"limit zero", "select * from T limit 0", &Select{Table: "T", Limit: limit(0)}},
		{"insert", "insert into Orders (Code, Qty, Note) values ('BHP', 10, null)",
			&Insert{Table: "Orders", Columns: []string{"Code", "Qty", "Note"}, Rows: [][]Literal{{str("BHP"), num("10"), NullLiteral()}}}},
		{"insert rows", "INSERT INTO T (a) VALUES (1), (2);",
			&Insert{Table: "T", Columns: []string{"a"}, Rows: [][]Literal{{num("1")}, {num("2")}}}},
		{"update", "update T set a = 1, b = NULL where c = 'x'",
			&Update{Table: "T", Set: []Assignment{{"a", num("1")}, {"b", NullLiteral()}}, Where: cmp("c", OpEq, str("x"))}},
		{"delete", "delete from T where a in [1,2] or b is null",
			&Delete{Table: "T", Where: or(cmp("a", OpIn, num("1"), num("2")), cmp("b", OpIsNull))}},

		// Contextual keywords.
		{"table Order", "select * from Order order by Price", &Select{Table: "Order", OrderBy: []OrderTerm{{"Price", false}}}},
		{"column Order, Limit", "select Order from T where Limit = 1", sel("T", cmp("Limit", OpEq, num("1")), "Order")},
		{"column From", "select From from From", sel("From", nil, "From")},
		{"select keywords as columns", "select Select, Where, Like, Not, In from Select where Like like 'a*'",
			sel("Select", cmp("Like", OpLike, str("a*")), "Select", "Where", "Like", "Not", "In")},
		{"column Not compared", "select * from T where Not = 1", sel("T", cmp("Not", OpEq, num("1")))},
		{"not then column Not", "select * from T where not Not <> 1", sel("T", not(cmp("Not", OpNe, num("1"))))},
		{"column And Or", "select * from T where And = 1 and Or = 2",
			sel("T", and(cmp("And", OpEq, num("1")), cmp("Or", OpEq, num("2"))))},
		{"column Is", "select * from T where Is is not null", sel("T", cmp("Is", OpIsNotNull))},
		{"column Between", "select * from T where Between between 1 and 2", sel("T", cmp("Between", OpBetween, num("1"), num("2")))},
		{"order by Desc Limit", "select * from T order by Desc desc, Limit limit 5",
			&Select{Table: "T", OrderBy: []OrderTerm{{"Desc", true}, {"Limit", false}}, Limit: limit(5)}},
		{"update Set", "update Set set Set = 1 where Where = 2",
			&Update{Table: "Set", Set: []Assignment{{"Set", num("1")}}, Where: cmp("Where", OpEq, num("2"))}},
		{"insert Values", "insert into Values (Values) values (1)",
			&Insert{Table: "Values", Columns: []string{"Values"}, Rows: [][]Literal{{num("1")}}}},
		{"names kept as written", "SELECT cOdE FROM sEcUrItY", sel("sEcUrItY", nil, "cOdE")},
		{"underscore names", "select _a1, b_2 from _T", sel("_T", nil, "_a1", "b_2")},
		{"whitespace", "select\t*\r\nfrom\nT\n", sel("T", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.src, Limits{})
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q)\n got %#v\nwant %#v", tt.src, got, tt.want)
			}
			if err := Check(got); err != nil {
				t.Fatalf("Check: %v", err)
			}
			again, err := Parse(Format(got), Limits{})
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through %q: %v", Format(got), err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		line     int
		column   int
		msg      string // a substring of the message
		tooLarge bool
	}{
		{"misspelt from", "select * form T", 1, 10, `expected FROM, found "form"`, false},
		{"error message shape", "select a form T", 1, 10, `expected "," or FROM`, false},
		{"empty", "", 1, 1, "expected SELECT, INSERT, UPDATE or DELETE, found end of statement", false},
		{"unknown statement", "drop table T", 1, 1, `found "drop"`, false},
		{"second line", "select *\nfrom T\nwhere a = ", 3, 11, "expected a value", false},
		{"column counts runes", "select * from T where a = 'é' and", 1, 34, "expected column name", false},
		{"stacked statements", "select * from T; delete from T where a = 1", 1, 18, `only one statement is allowed: found "delete"`, false},
		{"two semicolons", "select * from T;;", 1, 17, "only one statement", false},
		{"line comment", "select * from T -- hi", 1, 17, "comments are not supported", false},
		{"block comment", "select * /* hi */ from T", 1, 10, "comments are not supported", false},
		{"update without where", "update T set a = 1", 1, 19, "UPDATE needs a WHERE clause", false},
		{"update without where semicolon", "update T set a = 1;", 1, 19, "UPDATE needs a WHERE clause", false},
		{"delete without where", "delete from T", 1, 14, "DELETE needs a WHERE clause", false},
		{"empty in", "select * from T where a in []", 1, 29, "IN needs at least one value", false},
		{"empty in parens", "select * from T where a in ()", 1, 29, "IN needs at least one value", false},
		{"in mismatched close", "select * from T where a in [1)", 1, 30, `expected "," or "]"`, false},
		{"eq null", "select * from T where a = null", 1, 27, "use IS NULL", false},
		{"like number", "select * from T where a like 5", 1, 30, "LIKE needs a string, found number", false},
		{"begins bool", "select * from T where a begins true", 1, 32, "BEGINS needs a string, found boolean", false},
		{"column on the right", "select * from T where a = b", 1, 27, `expected a value (a string, number, TRUE or FALSE), found "b"`, false},
		{"missing operator", "select * from T where a 1", 1, 25, `an operator (=, <>`, false},
		{"not without pattern op", "select * from T where a not = 1", 1, 29, "LIKE, BEGINS, CONTAINS, IN or BETWEEN after NOT", false},
		{"is without null", "select * from T where a is 1", 1, 28, "expected NULL", false},
		{"unterminated string", "select * from T where a = 'abc", 1, 27, "unterminated string", false},
		{"unterminated doubled", "select * from T where a = 'abc''", 1, 27, "unterminated string", false},
		{"non-ascii identifier", "select * from Sécurité", 1, 16, `identifiers are ASCII only: found 'é'`, false},
		{"non-ascii identifier start", "select * from éT", 1, 15, `identifiers are ASCII only`, false},
		{"kelvin sign", "select * from \u212aT", 1, 15, `identifiers are ASCII only`, false},
		{"nbsp", "select\u00a0* from T", 1, 7, `unexpected character '\u00a0'`, false},
		{"invalid utf8", "select * from T where a = '\xff'", 1, 28, "not valid UTF-8", false},
		{"nul in string", "select * from T where a = 'a\x00b'", 1, 27, "NUL", false},
		{"bad number", "select * from T where a = 1.", 1, 27, "a decimal point must be followed by digits", false},
		{"number glued to word", "select * from T where a = 12abc", 1, 27, "invalid number", false},
		{"leading dot", "select * from T where a = .5", 1, 27, "a number must start with a digit", false},
		{"lone minus", "select * from T where a = - 5", 1, 27, "a minus sign must be followed by digits", false},
		{"exponent", "select * from T where a = 1e5", 1, 27, "invalid number", false},
		{"negative limit", "select * from T limit -1", 1, 23, "a whole number of rows", false},
		{"decimal limit", "select * from T limit 1.5", 1, 23, "a whole number of rows", false},
		{"huge limit", "select * from T limit 99999999999999999999", 1, 23, "too large", true},
		{"duplicate column", "select a, A from T", 1, 11, `column "A" appears twice`, false},
		{"duplicate insert column", "insert into T (a, a) values (1, 2)", 1, 19, "appears twice", false},
		{"duplicate set column", "update T set a = 1, a = 2 where b = 1", 1, 21, "appears twice", false},
		{"short row", "insert into T (a, b) values (1)", 1, 31, "row 1 has 1 values for 2 columns", false},
		{"long row", "insert into T (a) values (1), (2, 3)", 1, 35, "row 2 has more values than the 1 columns", false},
		{"insert true is fine but star is not", "insert into T (a) values (*)", 1, 27, "expected a value (a string, number, TRUE, FALSE or NULL)", false},
		{"where dangling", "select * from T where", 1, 22, "expected column name, NOT or \"(\", found end of statement", false},
		{"unclosed paren", "select * from T where (a = 1", 1, 29, `expected AND, OR or ")"`, false},
		{"extra after where", "select * from T where a = 1 b", 1, 29, "expected AND, OR, ORDER BY, LIMIT or end of statement", false},
		{"order without by", "select * from T order a", 1, 23, "expected BY", false},
		{"found truncated", "select * from " + "T where " + strings.Repeat("x", 100) + " 1", 1, 124, `"...`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.src, Limits{})
			se, ok := errors.AsType[*SyntaxError](err)
			if !ok {
				t.Fatalf("Parse(%q) = %v, want a *SyntaxError", tt.src, err)
			}
			if se.Line != tt.line || se.Column != tt.column || !strings.Contains(se.Msg, tt.msg) {
				t.Fatalf("Parse(%q) = %q (line %d, column %d), want line %d, column %d, message containing %q",
					tt.src, se.Error(), se.Line, se.Column, tt.line, tt.column, tt.msg)
			}
			if errors.Is(err, ErrTooLarge) != tt.tooLarge {
				t.Fatalf("errors.Is(%v, ErrTooLarge) = %v", err, !tt.tooLarge)
			}
		})
	}
}

func TestSyntaxErrorText(t *testing.T) {
	_, err := Parse("select * form T", Limits{})
	want := `syntax error at line 1, column 10: expected FROM, found "form"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if se := err.(*SyntaxError); se.Pos != 9 {
		t.Fatalf("Pos = %d, want 9", se.Pos)
	}
}

// TestErrorNeverEchoesInput checks that a huge token is cut in the message.
func TestErrorNeverEchoesInput(t *testing.T) {
	long := strings.Repeat("y", 5000)
	for _, src := range []string{
		"select * form" + long,
		"select * from T where a = '" + long + "' '" + long + "'",
		"select * from T where a = 1 " + long,
	} {
		_, err := Parse(src, Limits{})
		if err == nil || len(err.Error()) > 200 {
			t.Fatalf("error for a long input: %d bytes: %.300v", len(err.Error()), err)
		}
	}
}
