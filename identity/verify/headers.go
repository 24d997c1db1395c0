package verify

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// HeaderPolicy passes a verified identity to a backend in request headers
// without letting the client speak for it: every header the policy sets
// or names to strip is first deleted in every spelling the client may have
// sent (case-insensitively, "_" for "-": many backends read X_Auth_User as
// X-Auth-User), then set from templates that the caller expands (e.g.
// Caddy's placeholders; this package knows nothing of them).
//
// A HeaderPolicy is compiled once and never changes: Apply is safe for
// concurrent use (each call on a header map its caller owns).
type HeaderPolicy struct {
	set                []headerTemplates // sorted by name
	strip              map[string]bool   // folded names (foldHeaderName)
	stripAuthorization bool
}

type headerTemplates struct {
	name      string // canonical
	templates []string
}

// ValidateHeaderPolicy checks what NewHeaderPolicy takes: header names are
// HTTP tokens (RFC 9110 §5.1), each header to set has at least one
// template, and Authorization is never set. It changes nothing.
func ValidateHeaderPolicy(set map[string][]string, strip []string) error {
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !validHeaderName(name) {
			return fmt.Errorf("bad header name %q", name)
		}
		if len(set[name]) == 0 {
			return fmt.Errorf("header %q has no value", name)
		}
		if strings.EqualFold(name, "Authorization") {
			return errors.New("the Authorization header cannot be set")
		}
	}
	for _, name := range strip {
		if !validHeaderName(name) {
			return fmt.Errorf("bad header name %q", name)
		}
	}
	return nil
}

// NewHeaderPolicy compiles a policy: set maps header names to templates
// (each gives one value), strip names headers to delete, and
// stripAuthorization deletes the Authorization header too, so the token
// does not travel on. The headers in set are stripped as well.
func NewHeaderPolicy(set map[string][]string, strip []string, stripAuthorization bool) (*HeaderPolicy, error) {
	if err := ValidateHeaderPolicy(set, strip); err != nil {
		return nil, err
	}
	p := &HeaderPolicy{strip: map[string]bool{}, stripAuthorization: stripAuthorization}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		p.set = append(p.set, headerTemplates{http.CanonicalHeaderKey(name), slices.Clone(set[name])})
		p.strip[foldHeaderName(name)] = true
	}
	for _, name := range strip {
		p.strip[foldHeaderName(name)] = true
	}
	if stripAuthorization {
		p.strip[foldHeaderName("Authorization")] = true
	}
	return p, nil
}

// Apply rewrites h: it deletes the stripped headers in every spelling,
// then adds each set header's values, expand(template) for each template.
// A value that expands empty (e.g. an absent claim) is left out, and so is
// one holding a control character other than tab, which could split or
// smuggle a header. A stripped header named in Connection is taken out of
// it: a proxy deletes the headers Connection names (RFC 9110 §7.6.1), so a
// client could otherwise have it drop the ones set here.
func (p *HeaderPolicy) Apply(h http.Header, expand func(template string) string) {
	if len(p.strip) > 0 {
		for name := range h {
			if p.stripped(name) {
				delete(h, name)
			}
		}
		if conn, ok := h["Connection"]; ok {
			h["Connection"] = p.unprotected(conn)
			if len(h["Connection"]) == 0 {
				delete(h, "Connection")
			}
		}
	}
	for _, s := range p.set {
		for _, t := range s.templates {
			if v := expand(t); v != "" && validHeaderValue(v) {
				h[s.name] = append(h[s.name], v)
			}
		}
	}
}

// unprotected is the comma-separated lists vs without the names Protected
// reports.
func (p *HeaderPolicy) unprotected(vs []string) []string {
	var out []string
	for _, v := range vs {
		var keep []string
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" && !p.Protected(name) {
				keep = append(keep, name)
			}
		}
		if len(keep) > 0 {
			out = append(out, strings.Join(keep, ", "))
		}
	}
	return out
}

// Protected reports whether name (any spelling) is a header the policy
// sets or strips: one a client may neither name in Connection (Apply
// takes it out) nor send as a trailer (the caller refuses the request:
// Apply sees only the header section).
func (p *HeaderPolicy) Protected(name string) bool { return p.stripped(name) }

// stripped reports whether the header name is one to delete, folding it
// on the stack when it is short ASCII (every name a client can send is).
func (p *HeaderPolicy) stripped(name string) bool {
	var buf [64]byte
	if len(name) > len(buf) {
		return p.strip[foldHeaderName(name)]
	}
	b := buf[:len(name)]
	for i := range len(name) {
		c := name[i]
		switch {
		case c >= 0x80:
			return p.strip[foldHeaderName(name)]
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		b[i] = c
	}
	return p.strip[string(b)]
}

// foldHeaderName folds a header name for comparison: lower case, "_" as
// "-".
func foldHeaderName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 §5.1).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v may be sent as a header value: no
// control characters but tab.
func validHeaderValue(v string) bool {
	return !strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f })
}
