package queryproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

func TestAppendValue(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, `null`},
		{"int64", int64(-9223372036854775808), `-9223372036854775808`},
		{"float price", 37.48, `37.48`},
		{"float whole", 100.0, `100`},
		{"float tiny", 1e-7, `1e-7`},
		{"float huge", 1e21, `1e+21`},
		{"float just below 1e21", 1e20, `100000000000000000000`},
		{"float negative zero", math.Copysign(0, -1), `-0`},
		{"float32", float32(0.1), `0.1`},
		{"string", "BHP", `"BHP"`},
		{"string html left alone", "<a&b>", `"<a&b>"`},
		{"string quotes", `say "hi" \ bye`, `"say \"hi\" \\ bye"`},
		{"string controls", "a\nb\tc\rd\be\ff\x00g\x1f", `"a\nb\tc\rd\be\ff\u0000g\u001f"`},
		{"string line separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"string invalid utf-8", "a\xffb\xc3", `"a\ufffdb\ufffd"`},
		{"string multibyte", "Zürich 株式 €", `"Zürich 株式 €"`},
		{"bool", true, `true`},
		{"time utc", time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC), `"2026-11-21T10:30:00Z"`},
		{"time offset to utc", time.Date(2026, 11, 21, 20, 30, 0, 500_000_000, time.FixedZone("AEST", 10*3600)), `"2026-11-21T10:30:00.5Z"`},
		{"bytes", []byte{0, 1, 2, 0xff}, `"AAEC/w=="`},
		{"bytes empty", []byte{}, `""`},
		{"decimal", engine.Decimal("37.4800"), `37.4800`},
		{"decimal negative exponent", engine.Decimal("-1.5E+3"), `-1.5E+3`},
		{"decimal NaN quoted", engine.Decimal("NaN"), `"NaN"`},
		{"decimal leading zero quoted", engine.Decimal("007"), `"007"`},
		{"decimal injection quoted", engine.Decimal(`1,"x":2`), `"1,\"x\":2"`},
		{"int", 42, `42`},
		{"uint64", uint64(math.MaxUint64), `18446744073709551615`},
	}
	// NaN and the infinities have no JSON form; they are not NULL either, so they are
	// an error, never null. It failed when: they printed null, and a NOT NULL column
	// holding infinity read as NULL.
	for _, v := range []any{math.NaN(), math.Inf(1), math.Inf(-1), float32(math.Inf(1))} {
		if got, err := appendValue(nil, v); !errors.Is(err, ErrNotJSON) {
			t.Errorf("appendValue(%v) = %s, %v, want ErrNotJSON", v, got, err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendValue([]byte("x"), tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "x"+tt.want {
				t.Errorf("appendValue(%#v) = %s, want %s", tt.v, got[1:], tt.want)
			}
			if !json.Valid(got[1:]) {
				t.Errorf("appendValue(%#v) = %s: not valid JSON", tt.v, got[1:])
			}
		})
	}
}

func TestAppendValueUnsupported(t *testing.T) {
	if _, err := appendValue(nil, struct{}{}); err == nil {
		t.Fatal("appendValue(struct{}{}) succeeded, want an error")
	}
}

func TestIsJSONNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "37.48", "37.4800", "-1.5e10", "1E+2", "2e-3", "12345678901234567890.123"} {
		if !isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", ".5", "5.", "1e", "1e+", "0x10", "NaN", "Infinity", " 1", "1 ", "1.2.3", "--1", "1_000"} {
		if isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = true, want false", s)
		}
	}
}

// encodingJSON is what encoding/json writes for v, with HTML left unescaped.
func encodingJSON(t testing.TB, v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// FuzzAppendString checks that strings are written exactly as encoding/json writes them
// (with SetEscapeHTML(false)): valid JSON, invalid UTF-8 replaced, U+2028/2029 escaped.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "BHP", "a\"b\\c", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "\xe2\x80", "<&>", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := string(appendString(nil, s))
		if want := encodingJSON(t, s); got != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzAppendFloat checks that floats are written exactly as encoding/json writes them.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 37.48, -1, 1e21, 1e20, 1e-6, 1e-7, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		b, err := appendFloat(nil, v, 64)
		got := string(b)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// Not null: a value that is not NULL must not read as one.
			if !errors.Is(err, ErrNotJSON) || got != "" {
				t.Fatalf("appendFloat(%v) = %s, %v, want ErrNotJSON and nothing written", v, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("appendFloat(%v): %v", v, err)
		}
		if want := encodingJSON(t, v); got != want {
			t.Fatalf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	})
}

// FuzzDecimal checks that a Decimal is written unquoted exactly when it is a JSON number,
// and that the output is always valid JSON.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"37.48", "-0.5e10", "NaN", "01", "1,2", "1]", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := appendValue(nil, engine.Decimal(s))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Fatalf("Decimal %q encoded as %s: not valid JSON", s, got)
		}
		isNumber := s != "" && strings.TrimSpace(s) == s && json.Valid([]byte(s)) &&
			(s[0] == '-' || '0' <= s[0] && s[0] <= '9')
		if unquoted := got[0] != '"'; unquoted != isNumber {
			t.Fatalf("Decimal %q encoded as %s; JSON number: %v", s, got, isNumber)
		}
	})
}
