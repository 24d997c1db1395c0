package demobackend

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/examples/marketdata"
)

// TestAnswersThisMachineOnly: a request from another machine is refused
// (403) before it reaches the backend, which believes the identity headers
// it is sent, and so is a request for the backend's statistics.
func TestAnswersThisMachineOnly(t *testing.T) {
	h := &Handler{} // no backend: a request that reached it would panic
	for _, addr := range []string{"10.0.0.5:4321", "[2001:db8::1]:80", "192.168.1.9:1", "not an address"} {
		for _, path := range []string{"/", marketdata.StatsPath} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = addr
			w := httptest.NewRecorder()
			if err := h.ServeHTTP(w, r, nil); err != nil || w.Code != http.StatusForbidden {
				t.Errorf("%s from %s: %d %v, want 403", path, addr, w.Code, err)
			}
		}
	}
}

// TestReloadKeepsAnUnchangedBackend: a handler provisioned while another
// with the same configuration runs (a config reload builds the new before
// it cleans up the old) takes its backend, so that the connections live on;
// one with another configuration gets a backend of its own. It failed when
// each handler started a backend and closed its own a minute after a
// reload.
func TestReloadKeepsAnUnchangedBackend(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	provision := func(h *Handler) *Handler {
		t.Helper()
		if err := h.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	old := provision(&Handler{TickInterval: caddy.Duration(time.Second)})
	same := provision(&Handler{TickInterval: caddy.Duration(time.Second)})
	other := provision(&Handler{TickInterval: caddy.Duration(2 * time.Second)})
	if same.srv != old.srv {
		t.Error("a handler with the same configuration started a backend of its own")
	}
	if other.srv == old.srv {
		t.Error("a handler with another configuration took the running backend")
	}
	for _, h := range []*Handler{old, same, other} {
		if err := h.Cleanup(); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := backends.References(same.key); n != 0 {
		t.Errorf("%d references left to the backend after every handler's Cleanup", n)
	}
}
