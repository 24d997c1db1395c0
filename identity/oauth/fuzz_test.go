package oauth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// FuzzBasicCredentials: credentials encoded as RFC 6749 §2.3.1 says
// (form-urlencoded, then Base64) decode to exactly what was encoded.
func FuzzBasicCredentials(f *testing.F) {
	for _, c := range [][2]string{{"demo", "secret"}, {"a:b", "c:d"}, {"id with space", "%zz"}, {"é", ""}, {"x", "+/="}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, id, secret string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		raw := url.QueryEscape(id) + ":" + url.QueryEscape(secret)
		r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(raw)))
		gotID, gotSecret, ok, err := BasicCredentials(r)
		if id == "" {
			if ok || err == nil {
				t.Fatalf("empty client id accepted")
			}
			return
		}
		if !ok || err != nil || gotID != id || gotSecret != secret {
			t.Fatalf("(%q, %q) came back as (%q, %q), ok=%v, err=%v", id, secret, gotID, gotSecret, ok, err)
		}
	})
}

// FuzzBasicCredentialsNoPanic: any Authorization header is either
// accepted with a client id or refused with an invalid_request or
// invalid_client error; nothing panics.
func FuzzBasicCredentialsNoPanic(f *testing.F) {
	for _, h := range []string{"Basic ZGVtbzpzZWNyZXQ=", "Basic Og==", "basic  eDp5", "Bearer x", "Basic !!", "Basic JXp6OiV6eg=="} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header["Authorization"] = []string{header}
		id, _, ok, err := BasicCredentials(r)
		switch {
		case ok && (id == "" || err != nil):
			t.Fatalf("accepted credentials without an id: %q", header)
		case !ok && (err == nil || (err.Code != ErrInvalidClient && err.Code != ErrInvalidRequest)):
			t.Fatalf("refused %q without a proper error: %v", header, err)
		}
	})
}
