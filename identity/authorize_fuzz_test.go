package identity

import (
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var formAction = regexp.MustCompile(`<form method="post" action="([^"]*)">`)

// registeredPrefix reports whether u starts with a redirect URI some
// client registered, followed by nothing or by the response's own '?',
// '&' or '#'; the port of a loopback IP literal counts for nothing.
func registeredPrefix(cfg Config, u string) bool {
	for _, lb := range []string{"http://127.0.0.1:", "http://[::1]:"} {
		if rest, ok := strings.CutPrefix(u, lb); ok {
			i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if i > 0 {
				u = strings.TrimSuffix(lb, ":") + rest[i:]
			}
		}
	}
	for _, c := range cfg.Clients {
		for _, r := range c.RedirectURIs {
			if after, ok := strings.CutPrefix(u, r); ok && (after == "" || strings.ContainsRune("?&#", rune(after[0]))) {
				return true
			}
		}
	}
	return false
}

// FuzzAuthorizeRedirectTarget: whatever the query of an authorization
// request, the server never sends the browser anywhere but to a redirect
// URI a client registered (RFC 6749 §10.15: no open redirector), whether
// by a redirect or by a form_post page, and never fails with a server
// error.
func FuzzAuthorizeRedirectTarget(f *testing.F) {
	for _, q := range []string{
		codeRequest().Encode(),
		codeRequest("redirect_uri", "http://127.0.0.1:5000/cb").Encode(),
		codeRequest("redirect_uri", "http://127.0.0.1:5000/cb/x").Encode(),
		codeRequest("redirect_uri", "http://127.0.0.1/c").Encode(),
		codeRequest("redirect_uri", "https://spa.example/cb?tenant=a").Encode(),
		codeRequest("redirect_uri", "https://spa.example/cb?tenant=ab").Encode(),
		codeRequest("redirect_uri", "https://spa.example/cb?tenant=a#x").Encode(),
		codeRequest("redirect_uri", "http://127.0.0.1@evil.example/cb").Encode(),
		// prompt=none without a session answers with a redirect at once.
		codeRequest("redirect_uri", "https://spa.example/cb?tenant=ab", "prompt", "none").Encode(),
		codeRequest("redirect_uri", "http://127.0.0.1:5000/cbx", "prompt", "none").Encode(),
		codeRequest("redirect_uri", "https://spa.example/cb?tenant=a", "prompt", "none").Encode(),
		codeRequest("response_type", "token", "prompt", "none").Encode(),
		webRequest("code id_token", "response_mode", "form_post").Encode(),
		webRequest("code id_token", "response_mode", "form_post", "redirect_uri", "https://web.example/cb2").Encode(),
		webRequest("code", "prompt", "none", "redirect_uri", "").Encode(),
		"client_id=web&response_type=code&request=eyJhbGciOiJub25lIn0.eyJyZWRpcmVjdF91cmkiOiJodHRwczovL2V2aWwuZXhhbXBsZSJ9.",
		"client_id=spa&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb&redirect_uri=x",
		"%zz", "",
	} {
		f.Add(q)
	}
	fx := newFixture(f, withBrowserClients)
	f.Fuzz(func(t *testing.T, query string) {
		fx.t = t
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, testIssuer+PathAuthorize, nil)
		req.URL.RawQuery = query
		fx.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q", rec.Code, query)
		}
		if loc := rec.Header().Get("Location"); loc != "" && !registeredPrefix(fx.cfg, loc) {
			t.Fatalf("redirect to %q, which no client registered, for %q", loc, query)
		}
		if m := formAction.FindStringSubmatch(rec.Body.String()); m != nil && !strings.HasPrefix(m[1], "/connect/") {
			if action := html.UnescapeString(m[1]); !registeredPrefix(fx.cfg, action) {
				t.Fatalf("form posted to %q, which no client registered, for %q", action, query)
			}
		}
	})
}
