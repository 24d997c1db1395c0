package demobackend

import (
	"net/http"
	"net/http/httptest"
	"testing"

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
