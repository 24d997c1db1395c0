package sqlgen

import "testing"

// TestBindNumber: each numeric type takes the numbers it holds, as what it binds, and
// refuses the rest, whatever the spelling.
func TestBindNumber(t *testing.T) {
	for _, tt := range []struct {
		num  Numeric
		text string
		want any // nil: refused
	}{
		{NumInt16, "32767", int64(32767)}, {NumInt16, "32768", nil}, {NumInt16, "-32768", int64(-32768)},
		{NumInt32, "2147483648", nil}, {NumInt32, "2.147483647e9", int64(2147483647)},
		{NumInt64, "1.0", int64(1)}, {NumInt64, "1e3", int64(1000)}, {NumInt64, "1000e-3", int64(1)},
		{NumInt64, "0.5", nil}, {NumInt64, "1e999", nil}, {NumInt64, "-0", int64(0)}, {NumInt64, "0e999999999999", int64(0)},
		{NumInt64, "9223372036854775807", int64(9223372036854775807)}, {NumInt64, "9223372036854775808", nil},
		{NumInt64, "-9223372036854775808", int64(-9223372036854775808)}, {NumInt64, "1e99999999999999999999", nil},
		{NumFloat64, "1e308", 1e308}, {NumFloat64, "1e309", nil}, {NumFloat64, "-1e400", nil}, {NumFloat64, "1e-400", 0.0},
		{NumFloat64, "12345678901234567", int64(12345678901234567)}, // SQLite: an integer stays one
		{NumFloat32, "3.4e38", float64(float32(3.4e38))}, {NumFloat32, "3.5e38", nil}, {NumFloat32, "0.1", float64(float32(0.1))},
	} {
		v, _, why := tt.num.bindNumber(SQLite, tt.text)
		if tt.want == nil {
			if why == "" {
				t.Errorf("%s %s: bound %v, want refused", tt.num.Name, tt.text, v)
			}
			continue
		}
		if why != "" || v != tt.want {
			t.Errorf("%s %s: %v (%T) %q, want %v (%T)", tt.num.Name, tt.text, v, v, why, tt.want, tt.want)
		}
	}
	for _, tt := range []struct {
		p, s int
		text string
		ok   bool
	}{
		{5, 2, "999.99", true}, {5, 2, "999.994", true}, {5, 2, "999.995", false}, {5, 2, "1000", false},
		{5, 2, "0.996", true}, {5, 2, "-999.99", true}, {3, 0, "999.4", true}, {3, 0, "999.5", false},
		{2, 2, "0.99", true}, {2, 2, "0.995", false}, {2, 2, "1", false}, {3, -1, "9994", true}, {3, -1, "9995", false},
		{3, 5, "0", true}, {3, 5, "0.00999", true}, {3, 5, "0.00012", true}, {3, 5, "0.01", false},
		{3, 5, "0.009999995", false}, {3, 5, "-0.00999", true},
		{0, 0, "1e400", true}, {0, 0, "1e131072", false}, {0, 0, "1e-16383", true}, {0, 0, "1e-16384", false},
	} {
		_, cast, why := NumDecimalOf(tt.p, tt.s).bindNumber(PostgreSQL, tt.text)
		if (why == "") != tt.ok || tt.ok && cast != "numeric" {
			t.Errorf("numeric(%d,%d) %s: %q %q, want accepted %v", tt.p, tt.s, tt.text, cast, why, tt.ok)
		}
	}
}
