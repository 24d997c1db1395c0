package wshandler

import (
	"context"
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestSecureConnection: TLS counts; X-Forwarded-Proto counts only from a
// trusted proxy (Caddy's trusted_proxies), and only its last value.
func TestSecureConnection(t *testing.T) {
	for _, tt := range []struct {
		name    string
		tls     bool
		trusted any // the request's trusted_proxy var; nil: unset
		proto   []string
		want    bool
	}{
		{"TLS", true, nil, nil, true},
		{"plain", false, nil, nil, false},
		{"forged header", false, false, []string{"https"}, false},
		{"header without the var", false, nil, []string{"https"}, false},
		{"trusted proxy, https", false, true, []string{"HTTPS"}, true},
		{"trusted proxy, http", false, true, []string{"http"}, false},
		{"trusted proxy, client's value first", false, true, []string{"https", "http"}, false},
		{"trusted proxy, no header", false, true, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/ws", nil)
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			vars := map[string]any{}
			if tt.trusted != nil {
				vars[caddyhttp.TrustedProxyVarKey] = tt.trusted
			}
			r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
			for _, v := range tt.proto {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			if got := secureConnection(r); got != tt.want {
				t.Fatalf("secure %v, want %v", got, tt.want)
			}
		})
	}
}
