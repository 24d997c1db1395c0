package session

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStateCookie: the browser-state cookie is set at login with the
// session's state, readable by script, SameSite=None; Secure where a
// browser keeps it (https, loopback), Lax elsewhere; it changes with the
// session and is removed at logout.
func TestStateCookie(t *testing.T) {
	for _, tc := range []struct {
		issuer, name string
		secure       bool
		sameSite     http.SameSite
	}{
		{"https://id.example", "__Host-gatehouse.session_state", true, http.SameSiteNoneMode},
		{"http://localhost:8080", "gatehouse.session_state", true, http.SameSiteNoneMode},
		{"http://127.0.0.1:8080", "gatehouse.session_state", true, http.SameSiteNoneMode},
		{"http://id.internal", "gatehouse.session_state", false, http.SameSiteLaxMode},
	} {
		t.Run(tc.issuer, func(t *testing.T) {
			m, _, _ := newManager(t, tc.issuer)
			ctx := t.Context()
			w := httptest.NewRecorder()
			s, err := m.Start(ctx, w, httptest.NewRequest("POST", "/", nil), "alice", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var c *http.Cookie
			for _, k := range w.Result().Cookies() {
				if k.Name == tc.name {
					c = k
				}
			}
			if c == nil || c.HttpOnly || c.Secure != tc.secure || c.SameSite != tc.sameSite || c.Value != State(s) || len(c.Value) < 32 {
				t.Fatalf("browser-state cookie %+v (state %q)", c, State(s))
			}
			r := withCookies(w)
			if m.StateOf(r) != State(s) || m.StateCookieName() != tc.name {
				t.Errorf("StateOf %q", m.StateOf(r))
			}
			w2 := httptest.NewRecorder()
			s2, err := m.Start(ctx, w2, r, "alice", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if State(s2) == State(s) {
				t.Error("a new session kept the browser state")
			}
			w3 := httptest.NewRecorder()
			if err := m.End(ctx, w3, withCookies(w2)); err != nil {
				t.Fatal(err)
			}
			if m.StateOf(withCookies(w3)) != "" {
				t.Error("logout kept the browser state")
			}
		})
	}
}
