package identity

import (
	"slices"
	"strings"
)

// maxScopes bounds the scopes one request may name.
const maxScopes = 64

// parseScope splits a scope parameter (RFC 6749 §3.3): space-delimited
// scope tokens of %x21 / %x23-5B / %x5D-7E, duplicates dropped, order kept.
func parseScope(param string) ([]string, *Error) {
	fields := strings.Split(param, " ")
	var scopes []string
	for _, f := range fields {
		if f == "" {
			continue
		}
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
				return nil, oauthErr(ErrCodeInvalidScope, "malformed scope")
			}
		}
		if !slices.Contains(scopes, f) {
			scopes = append(scopes, f)
		}
		if len(scopes) > maxScopes {
			return nil, oauthErr(ErrCodeInvalidScope, "too many scopes")
		}
	}
	return scopes, nil
}

// clientScopes resolves the scope parameter against what the client may
// request: every named scope must be the client's (else invalid_scope);
// none named means the client's default scopes.
func (c *client) clientScopes(param string) ([]string, *Error) {
	requested, err := parseScope(param)
	if err != nil {
		return nil, err
	}
	if len(requested) == 0 {
		return slices.Clone(c.DefaultScopes), nil
	}
	for _, s := range requested {
		if !c.scopes[s] {
			return nil, oauthErr(ErrCodeInvalidScope, "the client may not request scope "+quoteScope(s))
		}
	}
	return requested, nil
}

// intersect keeps the scopes of want that allowed holds, in want's order.
func intersect(want, allowed []string) []string {
	out := make([]string, 0, len(want))
	for _, s := range want {
		if slices.Contains(allowed, s) {
			out = append(out, s)
		}
	}
	return out
}

// quoteScope quotes a scope token for an error description; parseScope
// already restricted its characters.
func quoteScope(s string) string {
	return `"` + truncate(s, 64) + `"`
}
