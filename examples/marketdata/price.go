package marketdata

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Price is an amount in cents. It marshals as a JSON number with exactly
// two decimals (4512 is 45.12, 4510 is 45.10), so a price is never a
// binary fraction on the wire.
type Price int64

// MarshalJSON writes p as a decimal number of whole cents.
func (p Price) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 24)), nil
}

func (p Price) appendJSON(b []byte) []byte {
	v := int64(p)
	if v < 0 {
		b = append(b, '-')
		if v == -v { // math.MinInt64 has no positive counterpart
			return append(b, "92233720368547758.08"...)
		}
		v = -v
	}
	b = strconv.AppendInt(b, v/100, 10)
	cents := v % 100
	return append(b, '.', byte('0'+cents/10), byte('0'+cents%10))
}

// String returns p as MarshalJSON writes it.
func (p Price) String() string {
	return string(p.appendJSON(nil))
}

// UnmarshalJSON reads a JSON number with at most two decimals and no
// exponent (45, 45.1, 45.12) as a Price; null leaves p as it is.
func (p *Price) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	digits := strings.TrimPrefix(whole, "-")
	if digits == "" || (len(digits) > 1 && digits[0] == '0') || !allDigits(digits) ||
		(hasFrac && (frac == "" || len(frac) > 2 || !allDigits(frac))) {
		return fmt.Errorf("price %s is not a number of whole cents", s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	u, err := strconv.ParseUint(digits+frac, 10, 64)
	if err != nil || (!neg && u > math.MaxInt64) || u > 1<<63 {
		return fmt.Errorf("price %s is out of range", s)
	}
	v := int64(u) // 1<<63 wraps to math.MinInt64, which negates to itself
	if neg {
		v = -v
	}
	*p = Price(v)
	return nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
