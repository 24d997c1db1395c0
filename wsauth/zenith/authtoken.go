package zenith

import (
	"encoding/base64"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxTokenBytes bounds an AuthToken request's access token.
const DefaultMaxTokenBytes = 8 << 10

// AuthTokenRequest is the Data of an AuthToken message (docs/api-surface.md §2.4).
type AuthTokenRequest struct {
	// Provider is the provider as sent; the caller accepts only Bearer.
	Provider string
	// AccessToken is the token after the Base-64 rule.
	AccessToken string
}

// ParseAuthToken reads data, an AuthToken message's raw Data, as
// {"Provider":…,"AccessToken":…}: one object with both members once, as
// strings, names exact (an escaped spelling is another member), other
// members ignored. The
// AccessToken is decoded by the Base-64 rule of docs/api-surface.md §2.4: when it
// is valid standard Base-64 (padded) the decoded bytes are the token,
// otherwise the text itself is (a JWT, with its dots, never decodes).
//
// maxToken bounds the token (0 means DefaultMaxTokenBytes): its text may
// be no longer than the Base-64 encoding of maxToken bytes and the token
// no longer than maxToken, else the error wraps ErrTokenTooLarge. Other
// faults wrap ErrMalformed. The error never quotes data.
func ParseAuthToken(data []byte, maxToken int) (AuthTokenRequest, error) {
	if maxToken <= 0 {
		maxToken = DefaultMaxTokenBytes
	}
	maxText := base64.StdEncoding.EncodedLen(maxToken)
	var req AuthTokenRequest
	s := getScanState(data)
	defer s.release()
	d := &s.dec
	tok, err := d.ReadToken()
	if err != nil {
		return req, s.syntaxError(err)
	}
	if tok.Kind() != '{' {
		return req, s.fault("AuthToken Data not a JSON object")
	}
	var text []byte
	var haveProvider, haveToken bool
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return req, s.syntaxError(err)
		}
		v, err := d.ReadValue()
		if err != nil {
			return req, s.syntaxError(err)
		}
		switch string(name) {
		case `"Provider"`:
			if haveProvider {
				return req, s.fault("duplicate member")
			}
			if v[0] != '"' {
				return req, s.fault("Provider not a string")
			}
			req.Provider, haveProvider = s.str(v), true
		case `"AccessToken"`:
			if haveToken {
				return req, s.fault("duplicate member")
			}
			if v[0] != '"' {
				return req, s.fault("AccessToken not a string")
			}
			if len(v) > 6*maxText+2 { // over the bound even if every character were a \uXXXX escape
				return req, tooLarge(d.InputOffset())
			}
			if text, err = jsontext.AppendUnquote(nil, v); err != nil {
				return req, s.fault("AccessToken not a string")
			}
			haveToken = true
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return req, s.syntaxError(err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return req, s.fault("data after the object")
		}
		return req, s.syntaxError(err)
	}
	switch {
	case !haveProvider:
		return req, s.fault("no Provider")
	case !haveToken || len(text) == 0:
		return req, s.fault("no AccessToken")
	case len(text) > maxText:
		return req, tooLarge(d.InputOffset())
	}
	if raw, err := base64.StdEncoding.Strict().AppendDecode(nil, text); err == nil {
		text = raw
	}
	if len(text) > maxToken {
		return req, tooLarge(d.InputOffset())
	}
	req.AccessToken = string(text)
	return req, nil
}

func tooLarge(offset int64) *ScanError {
	return &ScanError{Err: ErrTokenTooLarge, Reason: "access token over the bound", Offset: offset}
}
