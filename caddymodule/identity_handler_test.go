package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

func TestIdentityHandler(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := identity.NewServer(ctx, identity.Config{Issuer: "http://localhost:8080"}, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	h := &IdentityHandler{srv: srv}

	tests := []struct {
		path     string
		wantNext bool
	}{
		{identity.PathDiscovery, false},
		{identity.PathJWKS, false},
		{"/", true},
		{"/query", true},
		{identity.PathDiscovery + "/other", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			calledNext := false
			next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				calledNext = true
				w.WriteHeader(http.StatusTeapot)
				return nil
			})
			rec := httptest.NewRecorder()
			if err := h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil), next); err != nil {
				t.Fatal(err)
			}
			if calledNext != tt.wantNext {
				t.Errorf("next called: %t, want %t", calledNext, tt.wantNext)
			}
			if !tt.wantNext && rec.Code != http.StatusOK {
				t.Errorf("status %d, want 200", rec.Code)
			}
		})
	}
}

func TestParseIdentityHandlerErrors(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"argument", "gatehouse_identity foo", "wrong argument count"},
		{"option", "gatehouse_identity {\n\tissuer x\n}", `unrecognized subdirective "issuer"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := new(IdentityHandler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if err := new(IdentityHandler).UnmarshalCaddyfile(caddyfile.NewTestDispenser("gatehouse_identity")); err != nil {
		t.Errorf("plain directive: %v", err)
	}
}

// TestIdentityHandlerNeedsIssuer checks that gatehouse_identity refuses to
// start on a remote-only app, with a clear error.
func TestIdentityHandlerNeedsIssuer(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	err := loadCaddyfile(t, fmt.Sprintf(`{%s
	gatehouse {
		verifier {
			issuer https://login.example.com
			jwks_url http://127.0.0.1:1/jwks
		}
	}
}

http://127.0.0.1:%d {
	gatehouse_identity
}
`, testGlobalOptions, freePort(t)))
	if err == nil || !strings.Contains(err.Error(), "remote-only mode") {
		t.Errorf("error %v, want one explaining the remote-only mode", err)
	}
}
