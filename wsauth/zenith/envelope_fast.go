package zenith

import (
	"bytes"
	"encoding/binary"
)

// scanFast is Scan for the common message: ASCII only, no escape in any
// string, nesting no deeper than fastDepth. It reads such a message in one
// pass, strings eight bytes at a time, checking the same grammar as Scan's
// decoder (RFC 8259) and the same envelope rules (classify, member), and
// returns what Scan would; ok is false for any other message, valid or
// not, which Scan then reads with the decoder. So it never refuses: a
// message it does not take is read as before, errors and all.
//
// An ASCII message is valid UTF-8, and without escapes no string can hold
// a lone surrogate: what it accepts, the decoder accepts, with the same
// member values (FuzzScan checks both ways on every input).
func scanFast(msg []byte, topic *string) (env Envelope, ok bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return env, false
	}
	i = skipSpace(msg, i+1)
	if i < len(msg) && msg[i] == '}' {
		i++
	} else {
		for {
			if i >= len(msg) || msg[i] != '"' {
				return env, false
			}
			j, ok := fastString(msg, i)
			if !ok {
				return env, false
			}
			field, reason := classifyName(msg[i+1:j-1], false) // no escapes

			if reason != "" {
				return env, false
			}
			i = skipSpace(msg, j)
			if i >= len(msg) || msg[i] != ':' {
				return env, false
			}
			i = skipSpace(msg, i+1)
			start := i
			if i, ok = fastValue(msg, i, 1); !ok {
				return env, false
			}
			if field != 0 {
				if env.Present&field != 0 {
					return env, false
				}
				if reason := setMember(&env, field, msg[start:i:i], plainStr, topic); reason != "" {
					return env, false
				}
				env.Present |= field
			}
			i = skipSpace(msg, i)
			if i >= len(msg) {
				return env, false
			}
			if msg[i] == '}' {
				i++
				break
			}
			if msg[i] != ',' {
				return env, false
			}
			i = skipSpace(msg, i+1)
		}
	}
	if skipSpace(msg, i) != len(msg) {
		return env, false
	}
	if env.Present&HasController == 0 {
		env.Controller = DefaultController
	}
	if env.Present&HasAction == 0 {
		env.Action = DefaultAction
	}
	return env, true
}

// fastDepth bounds scanFast's nesting (and its recursion): MaxDepth, the
// envelope object's level being 1; a deeper message goes to the decoder,
// which refuses it.
const fastDepth = MaxDepth

// skipSpace is the index of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// fastValue is the index just past the JSON value at b[i], at nesting
// depth (the top-level object's members are at 1); ok is false when it is
// not one scanFast takes.
func fastValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return fastString(b, i)
	case c == '{':
		if depth >= fastDepth {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = fastString(b, i); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = fastValue(b, skipSpace(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
	case c == '[':
		if depth >= fastDepth {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = fastValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
	case c == 't':
		return fastLiteral(b, i, "true")
	case c == 'f':
		return fastLiteral(b, i, "false")
	case c == 'n':
		return fastLiteral(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return fastNumber(b, i)
	}
	return i, false
}

func fastLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// fastNumber reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// What follows it is the caller's to check (a delimiter, or the end).
func fastNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// fastString is the index just past the string at b[i] (a '"'); ok is
// false unless it holds only printable ASCII and DEL, no escape: the
// bytes scanFast takes. Past its first sixteen bytes, the closing quote is
// found first (bytes.IndexByte, vectorized), then the bytes before it are
// checked sixteen at a time: a
// word's bytes below 0x20, at or above 0x80, or equal to '\' are found at
// once (SWAR).
func fastString(b []byte, i int) (int, bool) {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		bs    = '\\' * ones
	)
	// A short string (a name, most values) byte by byte.
	j := i + 1
	for lim := min(len(b), j+16); j < lim; j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return j, false
		}
	}
	end := bytes.IndexByte(b[j:], '"')
	if end < 0 {
		return i, false
	}
	end += j
	body := b[j:end]
	k := 0
	for ; len(body)-k >= 16; k += 16 {
		w := binary.LittleEndian.Uint64(body[k:])
		v := binary.LittleEndian.Uint64(body[k+8:])
		x, y := w^bs, v^bs
		// Below 0x20 (among bytes below 0x80), the high bit set, or '\'.
		if ((w-0x20*ones)|w|(x-ones)&^x|(v-0x20*ones)|v|(y-ones)&^y)&highs != 0 {
			break
		}
	}
	for _, c := range body[k:] {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return i, false
		}
	}
	return end + 1, true
}
