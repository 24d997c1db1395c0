package zenith

import (
	"bytes"
	"errors"
	"io"
)

// ErrMember is the error of DataMember: Data is not an object, or it
// holds the member in a form a lenient backend could read differently.
var ErrMember = errors.New("data member unreadable")

// DataMember reads the member name (an ASCII name, as the policy's
// tables give it) of a message's Data: its raw JSON value, or found false
// when Data has no member of that name. Data must be one JSON object
// whose member names are printable ASCII written without escapes; a
// member whose name differs from name only in what the most lenient
// parsers ignore (case, '_', '-': "market", "MARKET", "Mar-ket" for
// "Market") is an error, as are a name written with an escape
// ("Mark\u0065t") and the name twice: a backend that matches names
// loosely, decodes escapes, or keeps the last of two, would read a value
// the gateway did not check.
func DataMember(data []byte, name string) (value []byte, found bool, err error) {
	if data == nil {
		return nil, false, nil
	}
	want := foldAll(nil, []byte(name))
	st := getScanState(data)
	defer st.release()
	d := &st.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false, ErrMember
	}
	var folded []byte
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue() // the name, as written
		if err != nil || raw.Kind() != '"' {
			return nil, false, ErrMember
		}
		n := raw[1 : len(raw)-1]
		if !printableASCII(n) || bytes.IndexByte(n, '\\') >= 0 {
			return nil, false, ErrMember
		}
		v, err := d.ReadValue()
		if err != nil {
			return nil, false, ErrMember
		}
		if string(n) == name {
			if found {
				return nil, false, ErrMember
			}
			value, found = v.Clone(), true
			continue
		}
		folded = foldAll(folded[:0], n)
		if string(folded) == string(want) {
			return nil, false, ErrMember
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, false, ErrMember
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, false, ErrMember
	}
	return value, found, nil
}

// foldAll is foldName without its bound.
func foldAll(dst, name []byte) []byte {
	for _, c := range name {
		if c, kept := foldByte(c); kept {
			dst = append(dst, c)
		}
	}
	return dst
}
