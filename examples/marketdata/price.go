package marketdata

import "strconv"

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
