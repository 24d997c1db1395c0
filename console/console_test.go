package console

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

func newHandler(t *testing.T, cfg Config) *Handler {
	t.Helper()
	if cfg.Issuer == "" {
		cfg.Issuer = "https://id.example.com"
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "console"
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(h *Handler, method, target, host string) (*httptest.ResponseRecorder, bool) {
	r := httptest.NewRequest(method, target, nil)
	if host != "" {
		r.Host = host
	}
	w := httptest.NewRecorder()
	return w, h.Serve(w, r)
}

// TestServePaths: the page at the base and its callback, the assets under
// console/, every other path left to the next handler.
func TestServePaths(t *testing.T) {
	h := newHandler(t, Config{Base: "/app/"})
	for _, tc := range []struct {
		path, contentType string
		served            bool
	}{
		{"/app/", "text/html; charset=utf-8", true},
		{"/app/callback", "text/html; charset=utf-8", true},
		{"/app/console/console.js", "text/javascript; charset=utf-8", true},
		{"/app/console/console.css", "text/css; charset=utf-8", true},
		{"/app/console/vendor/oidc-client-ts.min.js", "text/javascript; charset=utf-8", true},
		{"/app/console/vendor/oidc-client-ts.LICENSE", "text/plain; charset=utf-8", true},
		{"/app/console/index.html", "", false},
		{"/app/console/vendor/SHA256SUMS", "", false},
		{"/app/console/../console/console.js", "", false},
		{"/app", "", false},
		{"/", "", false},
		{"/app/other", "", false},
		{"/app/callback/x", "", false},
	} {
		w, served := get(h, http.MethodGet, tc.path, "")
		if served != tc.served {
			t.Errorf("%s: served %v, want %v", tc.path, served, tc.served)
			continue
		}
		if !served {
			continue
		}
		if w.Code != 200 || w.Header().Get("Content-Type") != tc.contentType || w.Body.Len() == 0 {
			t.Errorf("%s: %d %q, %d bytes", tc.path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		for _, hd := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
			if w.Header().Get(hd) == "" {
				t.Errorf("%s: no %s", tc.path, hd)
			}
		}
	}
	if w, served := get(h, http.MethodPost, "/app/", ""); !served || w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST to the page: %v %d %q", served, w.Code, w.Header().Get("Allow"))
	}
}

// TestCaching: the page is never stored (its URL carries a code); the
// assets are revalidated by their ETag.
func TestCaching(t *testing.T) {
	h := newHandler(t, Config{})
	w, _ := get(h, http.MethodGet, "/", "")
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("ETag") != "" {
		t.Errorf("the page: Cache-Control %q, ETag %q", w.Header().Get("Cache-Control"), w.Header().Get("ETag"))
	}
	w, _ = get(h, http.MethodGet, "/console/console.js", "")
	etag := w.Header().Get("ETag")
	if etag == "" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("console.js: Cache-Control %q, ETag %q", w.Header().Get("Cache-Control"), etag)
	}
	r := httptest.NewRequest(http.MethodGet, "/console/console.js", nil)
	r.Header.Set("If-None-Match", etag)
	w = httptest.NewRecorder()
	h.Serve(w, r)
	if w.Code != http.StatusNotModified {
		t.Errorf("console.js with its ETag: %d, want 304", w.Code)
	}
}

// TestPolicy: the Content-Security-Policy allows the page's origin, the
// identity server's and the query service's where they are elsewhere,
// and the socket's, and no inline script, frame or plugin; a Host header
// that could add a directive is left out.
func TestPolicy(t *testing.T) {
	h := newHandler(t, Config{Issuer: "https://id.example.com/", Query: "https://query.example.com/query"})
	w, _ := get(h, http.MethodGet, "/", "console.example.com:8443")
	want := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self' https://id.example.com https://query.example.com ws://console.example.com:8443 wss://console.example.com:8443; " +
		"form-action 'self' https://id.example.com; frame-src 'none'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
	if got := w.Header().Get("Content-Security-Policy"); got != want {
		t.Errorf("policy:\n got %s\nwant %s", got, want)
	}
	elsewhere := newHandler(t, Config{Issuer: "https://id.example.com", Socket: "wss://md.example.com/ws"})
	w, _ = get(elsewhere, http.MethodGet, "/", "console.example.com")
	if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "connect-src 'self' https://id.example.com wss://md.example.com;") {
		t.Errorf("a socket elsewhere: %s", got)
	}
	for _, host := range []string{"evil.example.com; script-src *", "a b", "x'y"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		if got := h.Policy(r); strings.Count(got, ";") != 9 || strings.Contains(got, "script-src *") || strings.Contains(got, host) {
			t.Errorf("Host %q: %s", host, got)
		}
	}
}

// TestPageConfig: the page carries its configuration, escaped, where the
// script reads it, and lists the configured links.
func TestPageConfig(t *testing.T) {
	h := newHandler(t, Config{ClientID: `a"<b>`, Scopes: []string{"openid", "offline_access", "Service/Market"},
		StepUpScopes: []string{"Service/Trading"}, Links: []Link{{Title: "The <flows>", Href: "/demo/"}}})
	w, _ := get(h, http.MethodGet, "/", "")
	body := w.Body.String()
	m := regexp.MustCompile(`data-config="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no data-config in the page: %.500s", body)
	}
	var pc pageConfig
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &pc); err != nil {
		t.Fatal(err)
	}
	if pc.ClientID != `a"<b>` || pc.Scopes != "openid offline_access Service/Market" || pc.StepUpScopes != "Service/Trading" ||
		pc.Socket != "/ws" || pc.Query != "/query" || pc.Base != "/" || pc.Issuer != "https://id.example.com" || len(pc.Symbols) == 0 {
		t.Errorf("the page's configuration: %+v", pc)
	}
	if strings.Contains(body, "<b>") || strings.Contains(body, "<flows>") {
		t.Error("the page holds configured text unescaped")
	}
	if !strings.Contains(body, `<a href="/demo/">The &lt;flows&gt;</a>`) {
		t.Error("the configured link is not listed")
	}
}

// TestConfigRefused: each bad setting is named.
func TestConfigRefused(t *testing.T) {
	good := Config{Issuer: "https://id.example.com", ClientID: "console"}
	for name, edit := range map[string]func(*Config){
		"issuer":            func(c *Config) { c.Issuer = "id.example.com" },
		"issuer scheme":     func(c *Config) { c.Issuer = "ftp://id.example.com" },
		"client_id":         func(c *Config) { c.ClientID = "" },
		"base":              func(c *Config) { c.Base = "/app" },
		"base unclean":      func(c *Config) { c.Base = "/a/../b/" },
		"socket":            func(c *Config) { c.Socket = "http://md.example.com/ws" },
		"socket relative":   func(c *Config) { c.Socket = "ws" },
		"socket host-less":  func(c *Config) { c.Socket = "//md.example.com/ws" },
		"query":             func(c *Config) { c.Query = "ws://q.example.com" },
		"query with a user": func(c *Config) { c.Query = "https://u:p@q.example.com" },
		"subprotocol":       func(c *Config) { c.Subprotocol = "a b" },
		"scope":             func(c *Config) { c.Scopes = []string{`a"b`} },
		"symbol":            func(c *Config) { c.Symbols = []string{"BHP"} },
		"symbol venue":      func(c *Config) { c.Symbols = []string{"BHP.asx"} },
		"link":              func(c *Config) { c.Links = []Link{{Title: "x", Href: "javascript:alert(1)"}} },
		"link title":        func(c *Config) { c.Links = []Link{{Href: "/x"}} },
		"issuer with query": func(c *Config) { c.Issuer = "https://id.example.com/?a=b" },
		"issuer with user":  func(c *Config) { c.Issuer = "https://u@id.example.com" },
		"issuer a path":     func(c *Config) { c.Issuer = "/id" },
		"base with a space": func(c *Config) { c.Base = "/a b/" },
		"base with a quote": func(c *Config) { c.Base = `/a"/` },
		"no offline_access": func(c *Config) { c.Scopes = []string{"openid", "Service/Market"} },
		"no openid":         func(c *Config) { c.Scopes = []string{"offline_access"} },
		"connect_src path":  func(c *Config) { c.ConnectSrc = []string{"https://x.example.com/token"} },
		"connect_src ws":    func(c *Config) { c.ConnectSrc = []string{"ftp://x.example.com"} },
	} {
		c := good
		edit(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
	}
	if _, err := New(good); err != nil {
		t.Errorf("the good config: %v", err)
	}
}

// TestNoInlineOrExternal: the page runs no inline script or style (the
// policy would refuse it) and nothing it serves loads from elsewhere.
func TestNoInlineOrExternal(t *testing.T) {
	page, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`<script(?:\s[^>]*)?>[^<]`, `<script(?:(?!src=)[^>])*>`, `\sstyle=`, `\son[a-z]+=`, `<style`} {
		if re == `<script(?:(?!src=)[^>])*>` {
			// Go's regexp has no lookahead: every script tag must have src.
			for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(page), -1) {
				if !strings.Contains(tag, " src=") {
					t.Errorf("a script without src: %s", tag)
				}
			}
			continue
		}
		if loc := regexp.MustCompile(re).FindString(string(page)); loc != "" {
			t.Errorf("index.html holds %q", loc)
		}
	}
	ours := regexp.MustCompile(`(?i)(?:src|href)\s*=\s*["']?(?:https?:)?//`)
	for _, name := range []string{"assets/index.html", "assets/console.js", "assets/console.css"} {
		b, _ := fs.ReadFile(assets, name)
		if loc := ours.FindString(string(b)); loc != "" {
			t.Errorf("%s loads from elsewhere: %q", name, loc)
		}
		if strings.Contains(string(b), "@import") || strings.Contains(string(b), "url(http") {
			t.Errorf("%s imports from elsewhere", name)
		}
	}
}

// TestVendoredChecksums: the vendored files are the ones SHA256SUMS
// names (docs/console.md: updating oidc-client-ts), and VERSION is the
// version the package says it vendors.
func TestVendoredChecksums(t *testing.T) {
	f, err := os.Open("assets/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		b, err := os.ReadFile("assets/vendor/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("assets/vendor/%s: SHA-256 %x, SHA256SUMS says %s", name, got, sum)
		}
		listed++
	}
	entries, _ := os.ReadDir("assets/vendor")
	for _, e := range entries {
		if n := e.Name(); n != "SHA256SUMS" && n != "VERSION" {
			listed--
		}
	}
	if listed != 0 {
		t.Errorf("SHA256SUMS does not list exactly the vendored files (%+d)", listed)
	}
	v, err := os.ReadFile("assets/vendor/VERSION")
	if err != nil || strings.TrimSpace(string(v)) != OIDCClientVersion {
		t.Errorf("assets/vendor/VERSION %q, OIDCClientVersion %s (%v)", v, OIDCClientVersion, err)
	}
}
