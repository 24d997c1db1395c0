package verify_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// expander expands "{name}" templates from vars, as Caddy's replacer does
// with placeholders: unknown names expand empty.
func expander(vars map[string]string) func(string) string {
	return func(t string) string {
		var b strings.Builder
		for {
			open := strings.IndexByte(t, '{')
			end := strings.IndexByte(t[open+1:], '}')
			if open < 0 || end < 0 {
				b.WriteString(t)
				return b.String()
			}
			b.WriteString(t[:open])
			b.WriteString(vars[t[open+1:open+1+end]])
			t = t[open+2+end:]
		}
	}
}

func TestHeaderPolicyApply(t *testing.T) {
	p, err := verify.NewHeaderPolicy(map[string][]string{
		"X-Auth-User":   {"{id}"},
		"x-auth-client": {"client={client_id}"},
		"X-Auth-Claims": {"{email}", "{absent}", "{evil}", "{tabbed}", "{del}"},
	}, []string{"X-Auth-Role", "x_auth_level"}, true)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{
		"Authorization": {"Bearer secret"},
		"X-Auth-User":   {"admin"}, // spoofed copies, in every spelling
		"x-auth-user":   {"admin"},
		"X_Auth_User":   {"admin"},
		"X_AUTH_CLIENT": {"evil"},
		"X-Auth-Claims": {"admin@example.com"},
		"X-Auth-Role":   {"admin"},
		"X_auth_role":   {"admin"},
		"X-Auth-Level":  {"9"},
		"X-Other":       {"kept"},
		"X-Auth-Users":  {"kept too"}, // another header, not a spelling
	}
	p.Apply(h, expander(map[string]string{
		"id": "alice", "client_id": "test-client", "email": "alice@example.com",
		"evil": "x\r\nX-Auth-Role: admin", "tabbed": "a\tb", "del": "a\x7fb",
	}))
	want := http.Header{
		"X-Auth-User":   {"alice"},
		"X-Auth-Client": {"client=test-client"},
		"X-Auth-Claims": {"alice@example.com", "a\tb"},
		"X-Other":       {"kept"},
		"X-Auth-Users":  {"kept too"},
	}
	for name, values := range h {
		if w, ok := want[name]; !ok || !slices.Equal(w, values) {
			t.Errorf("header %s: %q, want %q", name, values, w)
		}
	}
	for name := range want {
		if _, ok := h[name]; !ok {
			t.Errorf("header %s missing", name)
		}
	}
}

// Names a client may spell differently from the configuration are all
// stripped; the fold is ASCII case and "_" for "-", plus Unicode case for
// names that are not ASCII (never from a conforming client).
func TestHeaderPolicyStripSpellings(t *testing.T) {
	p, err := verify.NewHeaderPolicy(nil, []string{"X-Auth-User"}, false)
	if err != nil {
		t.Fatal(err)
	}
	pKey, err := verify.NewHeaderPolicy(nil, []string{"X-Auth-Key"}, false)
	if err != nil {
		t.Fatal(err)
	}
	long := "X-" + strings.Repeat("a", 100)
	pLong, err := verify.NewHeaderPolicy(nil, []string{long}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p     *verify.HeaderPolicy
		name  string
		strip bool
	}{
		{p, "X-Auth-User", true},
		{p, "x-auth-user", true},
		{p, "X_AUTH_USER", true},
		{p, "x_Auth-usER", true},
		{pKey, "X-Auth-\u212aey", true}, // Kelvin sign: "k" in lower case
		{pKey, "X_AUTH_KEY", true},
		{p, "X-Auth-User-Id", false},
		{p, "X-Auth-Use", false},
		{p, "Authorization", false},
		{pLong, strings.ToUpper(strings.ReplaceAll(long, "-", "_")), true},
		{pLong, long + "b", false},
	} {
		h := http.Header{tt.name: {"v"}}
		tt.p.Apply(h, expander(nil))
		if stripped := len(h) == 0; stripped != tt.strip {
			t.Errorf("%q stripped: %t, want %t", tt.name, stripped, tt.strip)
		}
	}
}

func TestHeaderPolicyKeepsAuthorization(t *testing.T) {
	p, err := verify.NewHeaderPolicy(map[string][]string{"X-Auth-User": {"{id}"}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Authorization": {"Bearer t"}}
	p.Apply(h, expander(map[string]string{"id": "alice"}))
	if h.Get("Authorization") != "Bearer t" || h.Get("X-Auth-User") != "alice" {
		t.Errorf("headers %v", h)
	}
}

func TestValidateHeaderPolicy(t *testing.T) {
	tests := []struct {
		name  string
		set   map[string][]string
		strip []string
		want  string // "" when valid
	}{
		{"empty", nil, nil, ""},
		{"full", map[string][]string{"X-Auth-User": {"{id}"}, "X_Auth_Scopes": {"{scopes}"}}, []string{"X-Auth-Role", "Authorization"}, ""},
		{"bad header name", map[string][]string{"X Auth": {"x"}}, nil, `bad header name "X Auth"`},
		{"header name with colon", map[string][]string{"X:Auth": {"x"}}, nil, `bad header name "X:Auth"`},
		{"empty header name", map[string][]string{"": {"x"}}, nil, `bad header name ""`},
		{"non-ASCII header name", map[string][]string{"X-Äuth": {"x"}}, nil, `bad header name`},
		{"header without value", map[string][]string{"X-Auth": nil}, nil, "has no value"},
		{"authorization header", map[string][]string{"authorization": {"x"}}, nil, "the Authorization header cannot be set"},
		{"bad strip header", nil, []string{"X:Auth"}, `bad header name "X:Auth"`},
		{"strip header with newline", nil, []string{"X-Auth\n"}, `bad header name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verify.ValidateHeaderPolicy(tt.set, tt.strip)
			_, newErr := verify.NewHeaderPolicy(tt.set, tt.strip, false)
			switch {
			case tt.want == "" && (err != nil || newErr != nil):
				t.Errorf("unexpected error: %v / %v", err, newErr)
			case tt.want != "" && (err == nil || newErr == nil):
				t.Errorf("no error (%v / %v), want one containing %q", err, newErr, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
}
