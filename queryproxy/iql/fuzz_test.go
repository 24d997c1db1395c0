package iql

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that for every statement it accepts the
// canonical text reads back as the same AST: Parse(Format(stmt)) == stmt, and the canonical
// text is a fixed point of Format. It also checks that what Parse returns passes Check.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"select * from Security",
		`SELECT Code, Price FROM Security WHERE Code IN ["BHP","ANZ"] AND Price >= 10.5 ORDER BY Price DESC LIMIT 10;`,
		"select Order from Order where Limit = 1 or not (Like like 'A*' and Not = -0.50) order by Order asc",
		`select * from T where a = "it's" or b = 'say ""hi""' or c between 'a' and 'b'`,
		"select * from T where a is not null and b is null and c not in (1, 2) and d not between 1 and 2",
		"select * from T where a begins 'x%_' or a contains '[?*]' or not not a != 1",
		"insert into Order (Code, Qty, Note) values ('BHP', 10, null), ('ANZ', -1.5, true)",
		"update T set a = 1, b = NULL where c <> 'x' and (d < 1 or e > 2)",
		"delete from T where ((a = 1 and b <= 2) or (c = 3))",
		"select * from T where a = 'é' and b = 1; ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmt, err := Parse(src, Limits{})
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Parse(%q) returned %T, not *SyntaxError", src, err)
			}
			return
		}
		if err := Check(stmt); err != nil {
			t.Fatalf("Parse(%q) returned an AST that Check refuses: %v", src, err)
		}
		text := Format(stmt)
		// The canonical text may be longer than the source (spaces around operators, a
		// doubled quote for each ' in a "..." string), so it is read without the size bound.
		again, err := Parse(text, Limits{MaxBytes: 1 << 30})
		if err != nil {
			t.Fatalf("Parse(%q) accepted, but its canonical text %q does not parse: %v", src, text, err)
		}
		if !reflect.DeepEqual(again, stmt) {
			t.Fatalf("Parse(Format(Parse(%q))) differs:\n text %q\n  got %#v\n want %#v", src, text, again, stmt)
		}
		if Format(again) != text {
			t.Fatalf("canonical text is not a fixed point: %q then %q", text, Format(again))
		}
	})
}
