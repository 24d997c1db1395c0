package oauth

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// MaxFormBody bounds a request body (docs/design.md, "Bounds").
const MaxFormBody = 64 << 10

// ReadForm reads and checks the body of a POSTed endpoint request: a form,
// at most MaxFormBody, no parameter repeated, not even with an empty value
// (RFC 6749 §3.2), nothing in the query string (credentials never travel in
// URLs). A parameter sent once with an empty value counts as absent (RFC
// 6749 §3.1).
func ReadForm(w http.ResponseWriter, r *http.Request) (url.Values, *Error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/x-www-form-urlencoded" {
		return nil, InvalidRequest("the body must be application/x-www-form-urlencoded")
	}
	if r.URL.RawQuery != "" {
		return nil, InvalidRequest("parameters must be sent in the request body, not the URL")
	}
	tooLarge := &Error{Code: ErrInvalidRequest, Description: "the request body is too large", Status: http.StatusRequestEntityTooLarge}
	if r.ContentLength > MaxFormBody {
		return nil, tooLarge
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBody)
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, InvalidRequest("malformed form body")
	}
	form := url.Values{}
	for k, vs := range r.PostForm {
		if len(vs) > 1 {
			return nil, InvalidRequest("parameter " + SafeParamName(k) + " is repeated")
		}
		if vs[0] != "" {
			form[k] = vs
		}
	}
	return form, nil
}

// SafeParamName is a request parameter's name as an error_description
// may name it: at most 40 letters, digits, "_", "-" and "." (every name
// OAuth and OpenID Connect define), else "(unnamed)". Nothing else a
// request sends reaches a description, so no client that shows one as
// HTML can be injected from a link an attacker chose.
func SafeParamName(k string) string {
	if k == "" || len(k) > 40 || strings.ContainsFunc(k, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.')
	}) {
		return "(unnamed)"
	}
	return k
}

// SecurityHeaders sets the headers of every response that may carry a
// credential (docs/api-surface.md §4.2, RFC 6749 §5.1): no caching anywhere, no
// referrer, and hsts as Strict-Transport-Security.
func SecurityHeaders(h http.Header, hsts string) {
	h.Set("Cache-Control", "no-store, no-cache, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Strict-Transport-Security", hsts)
	h.Set("Referrer-Policy", "no-referrer")
}
