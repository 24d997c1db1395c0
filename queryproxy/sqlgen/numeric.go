package sqlgen

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Numeric is what numbers a column's type holds, as its engine reads its catalog, so
// that Generate refuses a number the column cannot hold (a *StatementError naming the
// column: a 400) rather than have the database store something else (SQLite turns
// 1e999 into infinity, which a NOT NULL column then reads back as nothing) or fail with
// its own error (pgx refuses to encode a number too large for an integer: a 500). The
// zero value checks nothing: a column of an engine that reports no numeric type, or of
// a type whose numbers the engine checks itself.
type Numeric struct {
	// Kind is the family: NumInteger, NumFloat or NumDecimal; 0 checks nothing.
	Kind NumericKind
	// Bits is an integer's width (16, 32, 64) or a float's (32, 64).
	Bits int
	// Precision and Scale are a NumDecimal's numeric(p, s); a Precision of 0 is an
	// unconstrained numeric (PostgreSQL's limits: 131072 digits before the point,
	// 16383 after).
	Precision, Scale int
	// Name is the type's name in messages ("integer", "real", "numeric(10,2)").
	Name string
}

// NumericKind is the family of a Numeric.
type NumericKind uint8

const (
	// NumUnchecked: the column's numbers are not checked.
	NumUnchecked NumericKind = iota
	// NumInteger: an integral value within Bits (a value in any spelling, 1.0 or 1e3,
	// is taken and bound as the integer it is; a fraction is refused).
	NumInteger
	// NumFloat: a finite value of a float of Bits (rounded to it, as the database
	// would; one too large for it is refused).
	NumFloat
	// NumDecimal: a numeric(Precision, Scale): its integer part within Precision-Scale
	// digits once rounded to Scale digits after the point (the database rounds the
	// rest, as it does for any value).
	NumDecimal
)

// Numeric types of the engines.
var (
	NumInt16   = Numeric{Kind: NumInteger, Bits: 16, Name: "smallint"}
	NumInt32   = Numeric{Kind: NumInteger, Bits: 32, Name: "integer"}
	NumInt64   = Numeric{Kind: NumInteger, Bits: 64, Name: "bigint"}
	NumFloat32 = Numeric{Kind: NumFloat, Bits: 32, Name: "real"}
	NumFloat64 = Numeric{Kind: NumFloat, Bits: 64, Name: "double precision"}
)

// NumDecimalOf is numeric(precision, scale); precision 0 for an unconstrained numeric.
func NumDecimalOf(precision, scale int) Numeric {
	name := "numeric"
	if precision > 0 {
		name = fmt.Sprintf("numeric(%d,%d)", precision, scale)
	}
	return Numeric{Kind: NumDecimal, Precision: precision, Scale: scale, Name: name}
}

// PostgreSQL's limits of an unconstrained numeric.
const (
	pgNumericIntDigits  = 131072
	pgNumericFracDigits = 16383
)

// decimalNumber is a number literal's value as digits D (no leading or trailing zero;
// empty for zero) times 10^E.
type decimalNumber struct {
	neg bool
	d   string
	e   int
}

// maxExponent bounds the exponent of a literal that is read: beyond it the number is
// out of every type's range (or, negative, zero to every precision).
const maxExponent = 1 << 20

// parseDecimal reads a number literal's text: -?digits[.digits][e[+-]digits]. ok is
// false for another form.
func parseDecimal(text string) (n decimalNumber, ok bool) {
	s := text
	if strings.HasPrefix(s, "-") {
		n.neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return n, false
	}
	e := 0
	if hasExp {
		v, err := strconv.Atoi(exp)
		switch {
		case err == nil:
			e = v
		case strings.Trim(strings.TrimLeft(exp, "+-"), "0123456789") == "" && len(exp) > 1:
			e = maxExponent + 1 // too many digits: beyond every range
			if strings.HasPrefix(exp, "-") {
				e = -e
			}
		default:
			return n, false
		}
		e = max(min(e, maxExponent+1), -maxExponent-1)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	e -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	e += len(digits) - len(trimmed)
	n.d, n.e = trimmed, e
	if n.d == "" {
		n.neg, n.e = false, 0
	}
	return n, true
}

// integerText is an integral n (e >= 0, few digits) written out.
func (n decimalNumber) integerText() string {
	s := n.d + strings.Repeat("0", n.e)
	if n.d == "" {
		s = "0"
	}
	if n.neg {
		s = "-" + s
	}
	return s
}

// intDigits is how many digits the number has before the point (0 for |n| < 1).
func (n decimalNumber) intDigits() int { return max(0, len(n.d)+n.e) }

// bindNumber checks the number literal text against num and gives what to bind: an
// int64 for an integer type, a float64 for a float, the text with a numeric cast on
// PostgreSQL for a decimal. why is not empty when the column cannot hold it.
func (num Numeric) bindNumber(d Dialect, text string) (v any, cast, why string) {
	n, ok := parseDecimal(text)
	if !ok {
		return nil, "", "not a number"
	}
	switch num.Kind {
	case NumInteger:
		if n.e < 0 {
			return nil, "", "it has a fraction"
		}
		if n.intDigits() > 19 {
			return nil, "", "it is out of the type's range"
		}
		i, err := strconv.ParseInt(n.integerText(), 10, num.Bits)
		if err != nil {
			return nil, "", "it is out of the type's range"
		}
		return i, "", ""
	case NumFloat:
		if d == SQLite && n.e >= 0 && n.intDigits() <= 19 {
			// SQLite keeps an integer as one in a NUMERIC column and compares it
			// exactly with an INTEGER: an integral value that fits is bound as the
			// integer, not rounded to a double.
			if i, err := strconv.ParseInt(n.integerText(), 10, 64); err == nil {
				return i, "", ""
			}
		}
		if n.intDigits() > 400 {
			return nil, "", "it is out of the type's range"
		}
		if n.e < -maxExponent {
			return float64(0), "", ""
		}
		f, err := strconv.ParseFloat(text, num.Bits)
		if math.IsInf(f, 0) || math.IsNaN(f) || err != nil && f != 0 {
			return nil, "", "it is out of the type's range"
		}
		if num.Bits == 32 {
			f = float64(float32(f))
		}
		return f, "", ""
	case NumDecimal:
		if num.Precision == 0 {
			if n.intDigits() > pgNumericIntDigits || -n.e > pgNumericFracDigits {
				return nil, "", "it is out of the type's range"
			}
		} else if n.roundedMagnitude(num.Scale) > num.Precision-num.Scale {
			if num.Scale > num.Precision {
				return nil, "", fmt.Sprintf("it is not below 1e%d", num.Precision-num.Scale)
			}
			return nil, "", fmt.Sprintf("it has more than %d digits before the point", num.Precision-num.Scale)
		}
		if d == PostgreSQL {
			return text, "numeric", ""
		}
		v, cast := number(d, text)
		return v, cast, ""
	}
	v, cast = number(d, text)
	return v, cast, ""
}

// roundedMagnitude is m such that |n| < 10^m, with m the least, once n is rounded to
// scale digits after the point (half away from zero, as PostgreSQL rounds numeric):
// the count of digits before the point when |n| >= 1 (9.995 at scale 2 is 10.00: 2),
// minus the zeros right after the point below 1 (0.00012: -3); a value that rounds to
// zero has the least magnitude there is.
func (n decimalNumber) roundedMagnitude(scale int) int {
	m := len(n.d) + n.e
	keep := m + scale // the significant digits kept
	switch {
	case n.d == "" || keep < 0:
		return math.MinInt32 // rounds to zero
	case keep == 0:
		if n.d[0] >= '5' {
			return 1 - scale // rounds up to 10^-scale
		}
		return math.MinInt32
	case keep < len(n.d) && n.d[keep] >= '5' && strings.Trim(n.d[:keep], "9") == "":
		return m + 1 // a carry through the nines
	}
	return m
}
