package identity

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
		scopes, err := parseScope(param)
		if err != nil {
			return
		}
		if len(scopes) > maxScopes {
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
		id, _, ok, err := basicCredentials(r)
		if ok && (id == "" || err != nil) {
			t.Fatalf("accepted credentials without an id: %q", header)
		}
	})
}

func FuzzVerifyPasswordHash(f *testing.F) {
	h, _ := HashPassword("pw")
	for _, s := range []string{h, "$argon2id$v=19$m=1,t=1,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA", "$2a$04$abc", "$argon2id$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hash string) {
		// Must never panic, and never accept a wrong password.
		if ok, _ := VerifyPassword(hash, "definitely-not-it"); ok && hash != "" && strings.Contains(hash, "definitely") {
			t.Fatalf("hash %q accepted", hash)
		}
	})
}

// FuzzTokenEndpoint: any form body gets an RFC 6749 answer (200 or a 4xx
// JSON error), never a panic or a server error.
func FuzzTokenEndpoint(f *testing.F) {
	for _, body := range []string{
		"grant_type=password&client_id=app&username=demo&password=demo-pw",
		"grant_type=client_credentials&client_id=svc&client_secret=svc-secret",
		"grant_type=refresh_token&client_id=app&refresh_token=x",
		"grant_type=password&grant_type=password", "a=%zz", "scope=%00", "",
	} {
		f.Add(body, "application/x-www-form-urlencoded")
	}
	f.Add("{}", "application/json")
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, body, ctype string) {
		fx.t = t
		req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		res := fx.do(req)
		if res.status >= 500 {
			t.Fatalf("server error %d for %q: %s", res.status, body, res.raw)
		}
		if res.status != 200 && res.str("error") == "" {
			t.Fatalf("status %d without an error body: %s", res.status, res.raw)
		}
	})
}
