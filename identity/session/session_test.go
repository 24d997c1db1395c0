package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newManager(t *testing.T, issuer string) (*Manager, *sqlite.Store, *clock) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	m, err := New(Config{Store: st, Issuer: issuer, IdleTimeout: time.Hour, Lifetime: 3 * time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return m, st, c
}

// withCookies is a request carrying the cookies set on w.
func withCookies(w *httptest.ResponseRecorder) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range w.Result().Cookies() {
		if c.MaxAge >= 0 {
			r.AddCookie(c)
		}
	}
	return r
}

func TestCookieAttributes(t *testing.T) {
	for _, tc := range []struct {
		issuer, name, path string
		secure             bool
	}{
		{"https://id.example", "__Host-gatehouse.session", "/", true},
		{"https://id.example/auth", "gatehouse.session", "/auth", true},
		{"http://localhost:8080", "gatehouse.session", "/", false},
	} {
		t.Run(tc.issuer, func(t *testing.T) {
			m, _, _ := newManager(t, tc.issuer)
			w := httptest.NewRecorder()
			if _, err := m.Start(t.Context(), w, httptest.NewRequest("POST", "/", nil), "alice", time.Now()); err != nil {
				t.Fatal(err)
			}
			cs := w.Result().Cookies()
			if len(cs) != 2 {
				t.Fatalf("cookies %v", cs)
			}
			c := cs[0]
			if c.Name != tc.name || c.Path != tc.path || c.Secure != tc.secure || !c.HttpOnly ||
				c.SameSite != http.SameSiteLaxMode || c.Domain != "" || c.MaxAge != 0 || len(c.Value) < 43 {
				t.Errorf("cookie %+v", c)
			}
		})
	}
}

func TestSessionLifecycle(t *testing.T) {
	m, st, clk := newManager(t, "https://id.example")
	ctx := t.Context()
	w := httptest.NewRecorder()
	authTime := clk.Now().Add(-time.Second)
	s, err := m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "alice", authTime)
	if err != nil {
		t.Fatal(err)
	}
	r := withCookies(w)
	got, ok, err := m.Current(ctx, r)
	if err != nil || !ok || got.Subject != "alice" || got.ID != s.ID || !got.AuthTime.Equal(authTime) {
		t.Fatalf("Current: %+v %t %v", got, ok, err)
	}
	// The store holds the hash, never the secret.
	cookie, _ := r.Cookie("__Host-gatehouse.session")
	if strings.Contains(string(got.Hash), cookie.Value) || string(got.Hash) != string(Hash(cookie.Value)) {
		t.Error("the store does not hold the secret's hash")
	}

	// Used within the idle timeout, the session lives on; past it, it ends.
	clk.Add(50 * time.Minute)
	if err := m.Touch(ctx, got, "app"); err != nil {
		t.Fatal(err)
	}
	clk.Add(50 * time.Minute)
	if got, ok, _ = m.Current(ctx, r); !ok || len(got.Clients) != 1 || got.Clients[0] != "app" {
		t.Fatalf("touched session: %+v %t", got, ok)
	}
	clk.Add(61 * time.Minute)
	if _, ok, _ = m.Current(ctx, r); ok {
		t.Fatal("a session idle past its timeout is still live")
	}

	// Logging in again replaces the browser's session.
	w2 := httptest.NewRecorder()
	s2, err := m.Start(ctx, w2, r, "bob", clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, s.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the previous session survived a new login: %v", err)
	}
	r2 := withCookies(w2)
	w3 := httptest.NewRecorder()
	if err := m.End(ctx, w3, r2); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Session(ctx, s2.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("End left the session: %v", err)
	}
	if c := w3.Result().Cookies(); len(c) != 2 || c[0].MaxAge >= 0 || c[1].MaxAge >= 0 {
		t.Errorf("End did not clear the cookies: %v", c)
	}
}

func TestSessionAbsoluteLifetime(t *testing.T) {
	m, _, clk := newManager(t, "http://localhost")
	ctx := t.Context()
	w := httptest.NewRecorder()
	created := clk.Now()
	if _, err := m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "alice", clk.Now()); err != nil {
		t.Fatal(err)
	}
	r := withCookies(w)
	for range 5 { // used every 40 minutes: the idle timeout never passes
		clk.Add(40 * time.Minute)
		s, ok, err := m.Current(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if clk.Now().Sub(created) < 3*time.Hour {
				t.Fatalf("session ended early at %v", clk.Now())
			}
			return
		}
		if err := m.Touch(ctx, s, "app"); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("a session used every 40 minutes outlived its 3h lifetime")
}

func TestUnknownCookies(t *testing.T) {
	m, _, _ := newManager(t, "http://localhost")
	for _, v := range []string{"nope", strings.Repeat("a", 300), "a;b"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: "gatehouse.session", Value: v})
		if _, ok, err := m.Current(t.Context(), r); ok || err != nil {
			t.Errorf("%q: %t %v", v, ok, err)
		}
	}
}

func TestBrowserCookie(t *testing.T) {
	m, _, _ := newManager(t, "http://localhost")
	w := httptest.NewRecorder()
	v, err := m.Browser(w, httptest.NewRequest("GET", "/", nil))
	if err != nil || v == "" {
		t.Fatal(v, err)
	}
	r := withCookies(w)
	w2 := httptest.NewRecorder()
	if again, _ := m.Browser(w2, r); again != v || len(w2.Result().Cookies()) != 0 {
		t.Errorf("a browser with the cookie got another: %q", again)
	}
	if m.BrowserOf(r) != v {
		t.Error("BrowserOf")
	}
}

func TestGuard(t *testing.T) {
	g, err := NewGuard([]byte(strings.Repeat("k", 32)), "https://id.example")
	if err != nil {
		t.Fatal(err)
	}
	tok := g.Token("login", "browser-a")
	for _, tc := range []struct {
		name, token, purpose, binding string
		want                          bool
	}{
		{"good", tok, "login", "browser-a", true},
		{"another browser", tok, "login", "browser-b", false},
		{"another form", tok, "consent", "browser-a", false},
		{"missing", "", "login", "browser-a", false},
		{"no binding", g.Token("login", ""), "login", "", false},
		{"truncated", tok[:len(tok)-1], "login", "browser-a", false},
	} {
		if got := g.Check(tc.token, tc.purpose, tc.binding); got != tc.want {
			t.Errorf("%s: %t", tc.name, got)
		}
	}
	other, _ := NewGuard([]byte(strings.Repeat("x", 32)), "https://id.example")
	if other.Check(tok, "login", "browser-a") {
		t.Error("a token of another key passed")
	}
	if _, err := NewGuard([]byte("short"), "https://id.example"); err == nil {
		t.Error("short key accepted")
	}
}

func TestSameOrigin(t *testing.T) {
	g, _ := NewGuard([]byte(strings.Repeat("k", 32)), "https://id.example")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		ok      bool
	}{
		{"same origin", map[string]string{"Origin": "https://id.example", "Sec-Fetch-Site": "same-origin"}, true},
		{"no headers", nil, true},
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"same-site is not same-origin", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"other origin", map[string]string{"Origin": "https://evil.example"}, false},
		{"http downgrade", map[string]string{"Origin": "http://id.example"}, false},
		{"opaque origin", map[string]string{"Origin": "null"}, false},
		{"port", map[string]string{"Origin": "https://id.example:444"}, false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		err := g.SameOrigin(r)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrCrossSite)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestSessionEndedByRevocation: with Ended set, Current refuses a session whose
// authentication came before the user's sessions were ended (a session a login started
// while a password change landed, which the store's RevokeSubject did not see), and Start
// refuses, and deletes, one whose login checked a password that has changed since.
func TestSessionEndedByRevocation(t *testing.T) {
	m, _, clk := newManager(t, "https://id.example")
	ctx := t.Context()
	var notBefore time.Time // alice's sessions before it have ended
	m.cfg.Ended = func(_ context.Context, subject string, authTime time.Time) (bool, error) {
		return subject == "alice" && notBefore.After(authTime), nil
	}
	authTime := clk.Now().Add(-time.Second)
	w := httptest.NewRecorder()
	if _, err := m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "alice", authTime); err != nil {
		t.Fatal(err)
	}
	r := withCookies(w)
	if _, ok, err := m.Current(ctx, r); !ok || err != nil {
		t.Fatalf("Current before the revocation: %t %v", ok, err)
	}
	notBefore = clk.Now()
	if _, ok, err := m.Current(ctx, r); ok || err != nil {
		t.Fatalf("Current after the revocation: %t %v, want no session", ok, err)
	}
	w2 := httptest.NewRecorder()
	s, err := m.Start(ctx, w2, httptest.NewRequest("POST", "/", nil), "alice", authTime)
	if !errors.Is(err, ErrEnded) {
		t.Fatalf("Start of a login checked before the revocation: %v, want ErrEnded", err)
	}
	if s.Hash != nil {
		t.Fatalf("Start gave a session: %+v", s)
	}
	clk.Add(time.Second)
	if _, err := m.Start(ctx, httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), "alice", clk.Now()); err != nil {
		t.Fatalf("a login after the revocation: %v", err)
	}
}
