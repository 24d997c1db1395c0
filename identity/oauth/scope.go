package oauth

import (
	"slices"
	"strings"
)

// MaxScopes bounds the scopes one request may name.
const MaxScopes = 64

// ParseScope splits a scope parameter (RFC 6749 §3.3): space-delimited
// scope tokens of %x21 / %x23-5B / %x5D-7E, duplicates dropped, order kept.
func ParseScope(param string) ([]string, *Error) {
	var scopes []string
	for f := range strings.SplitSeq(param, " ") {
		if f == "" {
			continue
		}
		for i := 0; i < len(f); i++ {
			c := f[i]
			if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
				return nil, NewError(ErrInvalidScope, "malformed scope")
			}
		}
		if !slices.Contains(scopes, f) {
			scopes = append(scopes, f)
		}
		if len(scopes) > MaxScopes {
			return nil, NewError(ErrInvalidScope, "too many scopes")
		}
	}
	return scopes, nil
}

// Intersect keeps the scopes of want that allowed holds, in want's order.
func Intersect(want, allowed []string) []string {
	out := make([]string, 0, len(want))
	for _, s := range want {
		if slices.Contains(allowed, s) {
			out = append(out, s)
		}
	}
	return out
}

// QuoteScope quotes a scope token for an error description, in single
// quotes: RFC 6749 §5.2 allows no double quote or backslash there, and
// ParseScope already excluded both from the token.
func QuoteScope(s string) string {
	return "'" + Truncate(s, 64) + "'"
}

// Truncate shortens s to n bytes for a log or a description, marking the
// cut with "...".
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
