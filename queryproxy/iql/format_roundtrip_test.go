package iql

import "testing"

// TestFormatRoundTrip: every string of up to five characters of quotes,
// a backslash, a space, a bracket and a letter reads back from Format's
// text as itself, alone and with a single quote after it.
func TestFormatRoundTrip(t *testing.T) {
	alpha := []string{"a", "'", `"`, `\`, " ", "]", "é"}
	var gen func(prefix string, n int)
	count := 0
	gen = func(s string, n int) {
		stmt := &Select{Table: "T", Columns: []string{"a"}, Where: &Compare{Column: "a", Op: OpIn, Values: []Literal{{Kind: KindString, Text: s}, {Kind: KindString, Text: s + "'"}}}}
		text := Format(stmt)
		got, err := Parse(text, Limits{MaxBytes: 1 << 20})
		count++
		if err != nil {
			t.Fatalf("%q: %s: %v", s, text, err)
		}
		c := got.(*Select).Where.(*Compare)
		if c.Values[0].Text != s || c.Values[1].Text != s+"'" {
			t.Fatalf("%q -> %s -> %v", s, text, c.Values)
		}
		if n == 0 {
			return
		}
		for _, a := range alpha {
			gen(s+a, n-1)
		}
	}
	gen("", 5)
	if count != 19608 {
		t.Errorf("%d strings tried", count)
	}
}
