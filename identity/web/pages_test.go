package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

const hostile = `"><script>alert(1)</script><img src=x onerror=alert(2)>`

func render(t *testing.T, fn func(p *Pages, w http.ResponseWriter, r *http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	p, err := New("", "max-age=60")
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	fn(p, w, httptest.NewRequest(http.MethodGet, "http://id.test/connect/authorize", nil))
	return w
}

var nonceInCSP = regexp.MustCompile(`style-src 'nonce-([A-Za-z0-9_-]+)'`)

func TestPagesHeadersAndEscaping(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fn         func(p *Pages, w http.ResponseWriter, r *http.Request)
		status     int
		formAction string
		script     bool
	}{
		{"login", func(p *Pages, w http.ResponseWriter, r *http.Request) {
			p.Login(w, r, http.StatusUnauthorized, Login{Action: "/connect/login", ClientName: hostile, CSRFToken: hostile,
				Pending: hostile, Username: hostile, Error: hostile}, "https://app.example")
		}, http.StatusUnauthorized, "form-action 'self' https://app.example;", false},
		{"consent", func(p *Pages, w http.ResponseWriter, r *http.Request) {
			p.Consent(w, r, Consent{Action: "/connect/consent", ClientName: hostile, Username: hostile,
				Scopes: []Scope{{Name: hostile, Description: hostile}}, CSRFToken: hostile, Pending: hostile})
		}, http.StatusOK, "form-action 'self';", false},
		{"error", func(p *Pages, w http.ResponseWriter, r *http.Request) {
			p.Error(w, r, http.StatusBadRequest, Error{Heading: hostile, Message: hostile, Detail: hostile})
		}, http.StatusBadRequest, "form-action 'none';", false},
		{"form_post", func(p *Pages, w http.ResponseWriter, r *http.Request) {
			p.FormPost(w, r, "https://app.example/cb?x=1", url.Values{"code": {hostile}, "state": {hostile}})
		}, http.StatusOK, "form-action https://app.example;", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := render(t, tc.fn)
			h := w.Header()
			if w.Code != tc.status {
				t.Errorf("status %d, want %d", w.Code, tc.status)
			}
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", tc.formAction} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "script-src") != tc.script {
				t.Errorf("CSP %q: script-src present %t, want %t", csp, !tc.script, tc.script)
			}
			if h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "same-origin" ||
				!strings.Contains(h.Get("Cache-Control"), "no-store") || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", h)
			}
			m := nonceInCSP.FindStringSubmatch(csp)
			if m == nil {
				t.Fatalf("no style nonce in CSP %q", csp)
			}
			body := w.Body.String()
			if !strings.Contains(body, `<style nonce="`+m[1]+`">`) {
				t.Error("the inline style does not carry the CSP's nonce")
			}
			if tc.script && !strings.Contains(body, `<script nonce="`+m[1]+`">`) {
				t.Error("the inline script does not carry the CSP's nonce")
			}
			if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
				t.Errorf("hostile text rendered unescaped:\n%s", body)
			}
			if strings.Count(body, "<script") > btoi(tc.script) {
				t.Errorf("unexpected script element:\n%s", body)
			}
		})
	}
}

func TestNoncesDiffer(t *testing.T) {
	page := func(p *Pages, w http.ResponseWriter, r *http.Request) { p.Error(w, r, 400, Error{Heading: "x"}) }
	a := render(t, page).Header().Get("Content-Security-Policy")
	b := render(t, page).Header().Get("Content-Security-Policy")
	if a == b {
		t.Fatal("two responses share a nonce")
	}
}

func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://app.example:8443/cb?x=1": "https://app.example:8443",
		"https://App.Example:443/cb":      "https://app.example",
		"HTTP://app.example:80/cb":        "http://app.example",
		"http://app.example:443/cb":       "http://app.example:443",
		"http://[::1]:80/cb":              "http://[::1]",
		"http://127.0.0.1:8080/cb":        "http://127.0.0.1:8080",
		"com.example.app:/callback":       "com.example.app:",
		"::":                              "",
	} {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
