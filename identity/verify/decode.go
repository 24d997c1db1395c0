package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// strictB64 decodes base64url without padding, refusing non-canonical
// encodings (set low bits in the last character).
var strictB64 = base64.RawURLEncoding.Strict()

// decodeB64 decodes a JWS segment: every byte from the base64url alphabet
// (Go's decoder would skip CR and LF), canonical (RFC 7515 §2, RFC 4648
// §3.5), so that a token has exactly one spelling.
func decodeB64(seg string) ([]byte, error) {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return nil, fmt.Errorf("byte %#x at %d is not base64url", c, i)
		}
	}
	return strictB64.DecodeString(seg)
}

// maxMembers bounds the members of a JOSE header or a claims set.
const maxMembers = 256

// decodeObject reads a JSON object into its members, refusing duplicate
// member names (RFC 7515 §4, RFC 7519 §4) and anything after the object.
// Names are kept exactly: encoding/json matches struct fields without
// regard to case (and folds "ſ" to "s"), so claims are looked up here by
// their exact names instead. The object is checked whole by json.Valid,
// then its top level is walked by hand (no token objects, few
// allocations: this runs on every cold verification).
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(raw) || !utf8.Valid(raw) {
		return nil, errors.New("not valid JSON in UTF-8") // RFC 7519 §7.2, RFC 8259 §8.1
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	members := make(map[string]json.RawMessage, 12)
	i = skipSpace(raw, i+1)
	if raw[i] == '}' {
		return members, nil
	}
	for {
		// raw is valid JSON: a name, a colon, a value, then , or }.
		end := skipString(raw, i)
		name, err := stringValue(raw[i:end])
		if err != nil {
			return nil, err
		}
		if _, dup := members[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", truncate(name, 32))
		}
		if len(members) == maxMembers {
			return nil, errors.New("too many members")
		}
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // the colon
		end = skipValue(raw, i)
		members[name] = raw[i:end:end]
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return members, nil
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at raw[i] ('"').
func skipString(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index after the value starting at raw[i].
func skipValue(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				i = skipString(raw, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(raw) && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' && raw[i] != ' ' &&
		raw[i] != '\t' && raw[i] != '\r' && raw[i] != '\n' {
		i++
	}
	return i
}

// stringValue is the text of a JSON string token (with its quotes).
func stringValue(tok []byte) (string, error) {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	err := json.Unmarshal(tok, &s)
	return s, err
}

// member decodes the member name of m into v, if present; present reports
// whether it was. Strings without escapes and numbers are read without
// encoding/json.
func member(m map[string]json.RawMessage, name string, v any) (present bool, err error) {
	raw, ok := m[name]
	if !ok {
		return false, nil
	}
	switch dst := v.(type) {
	case *string:
		if len(raw) > 0 && raw[0] == '"' {
			*dst, err = stringValue(raw)
			if err != nil {
				return true, fmt.Errorf("%s: %w", name, err)
			}
			return true, nil
		}
		return true, fmt.Errorf("%s is not a string", name)
	case *float64:
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			if *dst, err = strconv.ParseFloat(string(raw), 64); err != nil {
				return true, fmt.Errorf("%s: %w", name, err)
			}
			return true, nil
		}
		return true, fmt.Errorf("%s is not a number", name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// Bounds of a NumericDate (RFC 7519 §2): not before the epoch, not past
// the year 9999.
const maxNumericDate = 253402300799

// numericDate decodes the NumericDate member name of m; nil when absent.
func numericDate(m map[string]json.RawMessage, name string) (*float64, error) {
	var f float64
	present, err := member(m, name, &f)
	if err != nil || !present {
		return nil, err
	}
	if math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return nil, fmt.Errorf("%s is out of range", name)
	}
	return &f, nil
}
