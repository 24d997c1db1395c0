package demobackend

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAnswersThisMachineOnly: a request from another machine is refused
// (403) before it reaches the backend, which believes the identity headers
// it is sent; loopback addresses, IPv4, IPv6 and mapped, are not.
func TestAnswersThisMachineOnly(t *testing.T) {
	h := &Handler{} // no backend: a request that reached it would panic
	for _, addr := range []string{"10.0.0.5:4321", "[2001:db8::1]:80", "192.168.1.9:1", "not an address"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nil); err != nil || w.Code != http.StatusForbidden {
			t.Errorf("from %s: %d %v, want 403", addr, w.Code, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:5555", "[::1]:80", "127.9.9.9:1", "[::ffff:127.0.0.1]:2"} {
		if !fromLoopback(addr) {
			t.Errorf("%s is this machine", addr)
		}
	}
}
