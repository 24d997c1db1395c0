package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
// their exact names instead.
func decodeObject(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errors.New("member name is not a string")
		}
		if _, dup := members[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", truncate(name, 32))
		}
		if len(members) == maxMembers {
			return nil, errors.New("too many members")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		members[name] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("unterminated JSON object")
	}
	if len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, errors.New("data after the JSON object")
	}
	return members, nil
}

// member decodes the member name of m into v, if present; present reports
// whether it was.
func member(m map[string]json.RawMessage, name string, v any) (present bool, err error) {
	raw, ok := m[name]
	if !ok {
		return false, nil
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
