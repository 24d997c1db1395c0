package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// TestAuthRemote protects routes through a real Caddy whose gatehouse app
// runs in remote-only mode, with the keys of a test issuer served by an
// httptest JWKS server: good tokens pass with their identity in headers,
// the hostile table is refused, scopes are enforced, spoofed identity
// headers never reach the upstream, and the metrics count it all.
func TestAuthRemote(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	jwksHits := atomic.Int64{}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(is.JWKS())
	}))
	t.Cleanup(jwks.Close)
	upstream := newEchoUpstream(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	err := loadCaddyfile(t, fmt.Sprintf(`{%s
	gatehouse {
		verifier {
			issuer %s
			jwks_url %s/jwks
		}
	}
}

%s {
	handle /metrics {
		metrics
	}
	handle /header/* {
		gatehouse_auth Service/Market {
			header X-Auth-User {http.auth.user.id}
			header X-Auth-Scopes {http.auth.user.scopes}
			header X-Auth-Email {http.auth.user.claims.email}
			header X-Auth-Exp {http.auth.user.exp}
			strip_header X-Auth-Role
			strip_authorization
		}
		reverse_proxy %s
	}
	handle /header_up/* {
		gatehouse_auth Service/Market {
			strip_header X-Auth-User
		}
		reverse_proxy %s {
			header_up +X-Auth-User {http.auth.user.id}
			header_up X-Auth-Client {http.auth.user.client_id}
		}
	}
	handle /news/* {
		gatehouse_auth Service/News Service/Trading {
			any_scope
			realm news
		}
		reverse_proxy %s
	}
}
`, testGlobalOptions, is.URL, jwks.URL, base, upstream.dial(), upstream.dial(), upstream.dial()))
	if err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	if jwksHits.Load() == 0 {
		t.Error("the remote key set was not fetched at start")
	}
	if _, err := os.Stat(filepath.Join(caddy.AppDataDir(), "gatehouse")); !os.IsNotExist(err) {
		t.Errorf("remote-only mode opened a store (%v)", err)
	}

	claims := is.Claims("alice", "Service/Market", "Service/News")
	claims["email"] = "alice@example.com"
	good := verifytest.Sign(is.Header(), claims, is.Private)
	spoofed := func(token string) http.Header {
		return http.Header{
			"Authorization": {"Bearer " + token},
			"X-Auth-User":   {"admin"},
			"x-auth-user":   {"root"},
			"X_Auth_User":   {"admin"},
			"X-Auth-Role":   {"admin"},
			"X-Auth-Client": {"evil"},
		}
	}

	t.Run("identity in headers", func(t *testing.T) {
		h := upstreamHeaders(t, request(t, http.MethodGet, base+"/header/quotes", spoofed(good)))
		for name, want := range map[string]string{
			"X-Auth-User":   "alice",
			"X-Auth-Scopes": "Service/Market Service/News",
			"X-Auth-Email":  "alice@example.com",
			"X-Auth-Exp":    strconv.FormatInt(claims["exp"].(int64), 10),
			"X-Auth-Role":   "",
			"X_auth_user":   "",
			"Authorization": "",
		} {
			if got := strings.Join(h[name], ","); got != want {
				t.Errorf("upstream got %s: %q, want %q", name, got, want)
			}
		}
	})
	t.Run("identity through header_up", func(t *testing.T) {
		h := upstreamHeaders(t, request(t, http.MethodGet, base+"/header_up/quotes", spoofed(good)))
		for name, want := range map[string]string{
			"X-Auth-User":   "alice", // stripped, then added by header_up
			"X_auth_user":   "",
			"X-Auth-Client": "test-client",
		} {
			if got := strings.Join(h[name], ","); got != want {
				t.Errorf("upstream got %s: %q, want %q", name, got, want)
			}
		}
		if len(h["Authorization"]) != 1 {
			t.Error("the Authorization header did not reach the upstream (strip_authorization is off here)")
		}
	})
	t.Run("any scope", func(t *testing.T) {
		upstreamHeaders(t, request(t, http.MethodGet, base+"/news/today", http.Header{"Authorization": {"Bearer " + good}}))
	})

	hits := upstream.hits.Load()
	t.Run("missing scope", func(t *testing.T) {
		r := request(t, http.MethodGet, base+"/news/today", http.Header{"Authorization": {"Bearer " + is.Token("bob", "Service/Market")}})
		if r.status != http.StatusForbidden {
			t.Fatalf("status %d, want 403", r.status)
		}
		want := `Bearer realm="news", error="insufficient_scope", error_description="the access token lacks a required scope", scope="Service/News Service/Trading"`
		if got := r.header.Get("WWW-Authenticate"); got != want {
			t.Errorf("WWW-Authenticate %q, want %q", got, want)
		}
	})
	t.Run("no token", func(t *testing.T) {
		r := request(t, http.MethodGet, base+"/header/quotes", http.Header{"X-Auth-User": {"admin"}})
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != `Bearer realm="gatehouse"` {
			t.Errorf("status %d, WWW-Authenticate %q", r.status, r.header.Get("WWW-Authenticate"))
		}
	})
	t.Run("malformed header", func(t *testing.T) {
		r := request(t, http.MethodGet, base+"/header/quotes", http.Header{"Authorization": {"Token " + good}})
		if r.status != http.StatusBadRequest || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_request"`) {
			t.Errorf("status %d, WWW-Authenticate %q", r.status, r.header.Get("WWW-Authenticate"))
		}
	})
	refusedBy := map[string]int{}
	for _, c := range is.Hostile("Service/Market") {
		if strings.ContainsAny(c.Token, "\r\n") {
			continue // cannot travel in an HTTP header at all: net/http refuses to send it
		}
		refusedBy[string(c.Reason)]++
		t.Run(c.Name, func(t *testing.T) {
			r := request(t, http.MethodGet, base+"/header/quotes", http.Header{"Authorization": {"Bearer " + c.Token}})
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", r.status)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer realm="gatehouse", error="invalid_token", error_description="`) {
				t.Errorf("WWW-Authenticate %q", got)
			}
			var body map[string]string
			if err := json.Unmarshal(r.body, &body); err != nil || body["error"] != "invalid_token" {
				t.Errorf("body %s (%v)", r.body, err)
			}
		})
	}
	if n := upstream.hits.Load(); n != hits {
		t.Errorf("%d refused requests reached the upstream", n-hits)
	}

	t.Run("metrics", func(t *testing.T) {
		r := request(t, http.MethodGet, base+"/metrics", nil)
		if r.status != http.StatusOK {
			t.Fatalf("metrics: status %d", r.status)
		}
		text := string(r.body)
		for reason, n := range refusedBy {
			sample := fmt.Sprintf(`gatehouse_verifications_total{outcome=%q}`, reason)
			if got := metricValue(text, sample); got != float64(n) {
				t.Errorf("%s = %v, want %d", sample, got, n)
			}
		}
		passed := metricValue(text, `gatehouse_verifications_total{outcome="cache_hit"}`) +
			metricValue(text, `gatehouse_verifications_total{outcome="verified"}`)
		if passed != 4 { // three passed, one lacked the scope
			t.Errorf("cache_hit + verified = %v, want 4", passed)
		}
		if got := metricValue(text, `gatehouse_jwks_fetches_total{result="success"}`); got < 1 {
			t.Errorf("jwks fetches: %v", got)
		}
		if got := metricValue(text, `gatehouse_jwks_fetches_total{result="failure"}`); got != 0 {
			t.Errorf("jwks fetch failures: %v", got)
		}
		if got := metricValue(text, `gatehouse_revocations_stale`); got != 0 {
			t.Errorf("gatehouse_revocations_stale = %v", got)
		}
		for _, secret := range []string{good, "alice", "admin"} {
			if strings.Contains(text, secret) {
				t.Errorf("the metrics show %q", secret)
			}
		}
	})
}
