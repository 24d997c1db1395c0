package queryproxy

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// parse reads the request into the one AST of all three endpoints: IQL
// text for /query, a structured select or insert for the others.
func (h *Handler) parse(r *http.Request, endpoint, table string) (iql.Statement, *Error) {
	body, e := h.readBody(r, endpoint)
	if e != nil {
		return nil, e
	}
	switch endpoint {
	case "query":
		if !utf8.Valid(body) {
			return nil, errInvalid("the statement is not valid UTF-8")
		}
		stmt, err := iql.Parse(string(body), h.cfg.Limits)
		if err != nil {
			return nil, parseError(err)
		}
		return stmt, nil
	case "select":
		return h.parseSelect(r.URL.RawQuery, table, body)
	default:
		return h.parseInsert(table, body)
	}
}

// readBody checks the Content-Type (text/plain for /query, JSON for the
// others; a select may have no body) and reads the body within
// MaxBodyBytes.
func (h *Handler) readBody(r *http.Request, endpoint string) ([]byte, *Error) {
	ct := r.Header.Get("Content-Type")
	want := "application/json"
	if endpoint == "query" {
		want = "text/plain"
	}
	if (ct != "" || endpoint != "select" || r.ContentLength > 0) && !plainMediaType(ct, want) {
		mt, params, err := mime.ParseMediaType(ct)
		charset, hasCharset := params["charset"]
		if err != nil || mt != want || hasCharset && !strings.EqualFold(charset, "utf-8") {
			return nil, &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia,
				Message: fmt.Sprintf("this endpoint takes Content-Type: %s; charset=utf-8", want)}
		}
	}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		return nil, tooLarge(h.cfg.MaxBodyBytes)
	}
	if r.ContentLength >= 0 {
		// The length is known and within the bound (net/http's body
		// reader stops at it): one read into a buffer of that size.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, errInvalid("the request body could not be read")
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.cfg.MaxBodyBytes+1))
	if err != nil {
		return nil, errInvalid("the request body could not be read")
	}
	if int64(len(body)) > h.cfg.MaxBodyBytes {
		return nil, tooLarge(h.cfg.MaxBodyBytes)
	}
	return body, nil
}

// plainMediaType reports whether ct is want itself, or want with
// "; charset=utf-8", spelled as clients send them (ASCII case ignored):
// the common Content-Types, accepted without parsing them.
func plainMediaType(ct, want string) bool {
	const charset = "; charset=utf-8"
	switch len(ct) {
	case len(want):
		return sqlgen.EqualFold(ct, want)
	case len(want) + len(charset):
		return sqlgen.EqualFold(ct[:len(want)], want) && sqlgen.EqualFold(ct[len(want):], charset)
	}
	return false
}

func tooLarge(max int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("the request body is over %d bytes", max)}
}
