package zenith

import (
	"io"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
)

// AuthOwnerRequest is the Data of an AuthOwner message: an OAuth client's
// credentials and a resource owner's, for the password grant.
type AuthOwnerRequest struct {
	ClientID     string
	ClientSecret string
	Username     string
	Password     string
}

// ParseAuthOwner reads an AuthOwner message's Data: one object whose members
// ClientID, ClientSecret, Username and Password (exact names after their
// escapes are decoded, each at most once, strings) are read and others
// ignored. Username and Password are
// required.
func ParseAuthOwner(data []byte) (AuthOwnerRequest, bool) {
	v, ok := ParseStrings(data, "ClientID", "ClientSecret", "Username", "Password")
	if !ok {
		return AuthOwnerRequest{}, false
	}
	c := AuthOwnerRequest{ClientID: v[0], ClientSecret: v[1], Username: v[2], Password: v[3]}
	return c, c.Username != "" && c.Password != ""
}

// ParseStrings reads a message's Data: one object whose members named in
// names (exact names after their escapes are decoded, each at most once,
// strings) are read, in the order of names, and others ignored. ok is
// false for anything else.
func ParseStrings(data []byte, names ...string) (values []string, ok bool) {
	if data == nil {
		return nil, false
	}
	values = make([]string, len(names))
	st := getScanState(data)
	defer st.release()
	d := &st.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	// Names are matched after their escapes are decoded and in exact
	// case, as the envelope's are; the decoder refuses invalid UTF-8, and
	// a name seen twice.
	var name []byte
	seen := make([]bool, len(names))
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, false
		}
		name = append(name[:0], tok.String()...)
		v, err := d.ReadValue()
		if err != nil {
			return nil, false
		}
		i := slices.Index(names, string(name))
		if i < 0 {
			continue
		}
		if seen[i] || v.Kind() != '"' {
			return nil, false
		}
		seen[i] = true
		text, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return nil, false
		}
		values[i] = string(text)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, false
	}
	return values, true
}
