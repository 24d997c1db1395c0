package caddymodule

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestAnnounceReady: the line comes once the discovery document answers
// 200 (not before, while it fails), names the issuer to open, and never
// comes for an issuer that is not on this machine or after ctx ends.
func TestAnnounceReady(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" || calls.Add(1) < 3 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	var out bytes.Buffer
	announceReady(t.Context(), zap.NewNop(), srv.URL, &out)
	if got, want := out.String(), "\nGatehouse is ready: open "+srv.URL+"/\n\n"; got != want || calls.Load() != 3 {
		t.Fatalf("wrote %q after %d requests, want %q after 3", got, calls.Load(), want)
	}

	out.Reset()
	start := time.Now()
	announceReady(t.Context(), zap.NewNop(), "https://auth.example.com", &out)
	if out.Len() != 0 || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("a public issuer: wrote %q, returned after %v; want nothing, at once", out.String(), time.Since(start))
	}

	down := httptest.NewServer(http.NotFoundHandler())
	defer down.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	announceReady(ctx, zap.NewNop(), down.URL, &out)
	if out.Len() != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("an issuer that never answers: wrote %q, returned after %v", out.String(), time.Since(start))
	}
	for host, want := range map[string]bool{"localhost": true, "demo.localhost": true, "127.0.0.1": true, "::1": true,
		"127.8.9.10": true, "10.0.0.1": false, "example.com": false, "localhost.example.com": false} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v", host, got)
		}
	}
}
