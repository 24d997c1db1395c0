package device

import (
	"strings"
	"testing"
)

// FuzzNormalizeUserCode: what NormalizeUserCode accepts is a user code
// (UserCodeLen characters of the alphabet), normalizing is idempotent and
// survives formatting, case and spaces; and every drawn code is accepted
// in the forms a user may type it.
func FuzzNormalizeUserCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdf ghjk", "bcdfghjk", "AEIO-U123", "", "BCDF-GHJ", "ＢCDF-GHJK", "B-C-D-F-G-H-J-K", "bcdf\tghjk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, typed string) {
		code, ok := NormalizeUserCode(typed)
		if !ok {
			if code != "" {
				t.Fatalf("refused %q but returned %q", typed, code)
			}
			return
		}
		if len(code) != UserCodeLen || strings.Trim(code, UserCodeAlphabet) != "" {
			t.Fatalf("%q normalized to %q, not a user code", typed, code)
		}
		for _, form := range []string{code, FormatUserCode(code), strings.ToLower(FormatUserCode(code)), " " + code[:3] + " " + code[3:] + " "} {
			if again, ok := NormalizeUserCode(form); !ok || again != code {
				t.Fatalf("%q (from %q) normalized to %q %t, want %q", form, typed, again, ok, code)
			}
		}
	})
}

func TestNewUserCode(t *testing.T) {
	seen := map[byte]bool{}
	for range 500 {
		c, err := newUserCode()
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := NormalizeUserCode(strings.ToLower(FormatUserCode(c))); !ok || got != c {
			t.Fatalf("drawn code %q does not survive entry: %q %t", c, got, ok)
		}
		for i := range len(c) {
			seen[c[i]] = true
		}
	}
	if len(seen) != len(UserCodeAlphabet) {
		t.Errorf("500 codes used %d of the %d characters", len(seen), len(UserCodeAlphabet))
	}
}
