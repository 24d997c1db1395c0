package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"", "a b", "openid offline_access Service/Market", "a\x00b", "é", strings.Repeat("x ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, param string) {
		scopes, err := ParseScope(param)
		if err != nil {
			return
		}
		if len(scopes) > MaxScopes {
			t.Fatalf("%d scopes past the bound", len(scopes))
		}
		seen := map[string]bool{}
		for _, s := range scopes {
			if s == "" || seen[s] || strings.ContainsAny(s, " \"\\") {
				t.Fatalf("bad scope %q in %q", s, param)
			}
			seen[s] = true
		}
	})
}

func FuzzBasicCredentials(f *testing.F) {
	for _, h := range []string{"Basic ZGVtbzpzZWNyZXQ=", "Basic Og==", "basic  eDp5", "Bearer x", "Basic !!", "Basic JXp6OiV6eg=="} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Authorization", header)
		id, _, ok, err := BasicCredentials(r)
		if ok && (id == "" || err != nil) {
			t.Fatalf("accepted credentials without an id: %q", header)
		}
	})
}
