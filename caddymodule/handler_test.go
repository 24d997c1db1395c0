package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

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
