package queryproxy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// The JSON of a result is written by hand into a reused buffer: no reflection, and no
// allocation per row or per value. Every function here appends to dst and returns it.

// appendHead appends the result's opening up to the first row:
// {"Columns":{"Code":{"Index":0,"Type":"String"},...},"Rows":[
func appendHead(dst []byte, cols []sqlgen.Column) []byte {
	dst = append(dst, `{"Columns":{`...)
	for i, c := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, c.Name)
		dst = append(dst, `:{"Index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"Type":`...)
		dst = appendString(dst, string(c.Type))
		dst = append(dst, '}')
	}
	return append(dst, `},"Rows":[`...)
}

// appendRow appends one row as a JSON array. On an error dst may hold part of the row.
func appendRow(dst []byte, vals []any) ([]byte, error) {
	dst = append(dst, '[')
	for i, v := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendValue(dst, v); err != nil {
			return dst, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return append(dst, ']'), nil
}

// appendValue appends one value of a row. The engines normalize values to nil, int64,
// float64, string, bool, time.Time, []byte and Decimal; the other integer and float types
// are accepted too. Any other type is an engine's bug, and an error.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		return appendFloat(dst, x, 64)
	case string:
		return appendString(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case time.Time:
		// RFC 3339 in UTC, with as many fraction digits as the time has (none for whole
		// seconds): 2026-11-21T10:30:00Z.
		dst = append(dst, '"')
		dst = x.UTC().AppendFormat(dst, time.RFC3339Nano)
		return append(dst, '"'), nil
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), nil
	case engine.Decimal:
		if isJSONNumber(string(x)) {
			return append(dst, x...), nil
		}
		return appendString(dst, string(x)), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case float32:
		return appendFloat(dst, float64(x), 32)
	}
	return dst, fmt.Errorf("value of unsupported type %T", v)
}

// appendFloat appends f as encoding/json does: the shortest decimal that reads back as the
// same float (so 37.48 prints 37.48, and a price never gains digits it did not have),
// without an exponent between 1e-6 and 1e21, with one outside it (1e+21, 1e-7). NaN and
// the infinities are not JSON numbers, and not NULL either: they are an error
// (ErrNotJSON), which ends the result as a failure does, never a null that would say
// the value was NULL.
func appendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, ErrNotJSON
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 -> 1e-7
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// ErrNotJSON is the error of a value that has no JSON form (a float that is NaN or
// infinite): the result is cut short with internal_error, as for any failure of its
// rows, rather than show a null for a value that is not NULL.
var ErrNotJSON = errors.New("a value with no JSON form (NaN or an infinity)")

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string (RFC 8259 §7): '"' and '\' escaped, control
// characters escaped, each byte of invalid UTF-8 replaced by \ufffd, and U+2028 and U+2029
// escaped (they end a line in JavaScript). '<', '>' and '&' are left alone: the result is
// served as application/json, never embedded in HTML. The output is that of encoding/json
// with SetEscapeHTML(false).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isJSONNumber reports whether s is a number in JSON's grammar (RFC 8259 §6):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i+1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// digits returns the index of the first byte at or after i that is not an ASCII digit.
func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}
