package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuthInProcess protects a route with the app's own tokens: a token
// from /connect/token (client credentials) passes, and is refused once
// revoked through /connect/revocation; the token metrics count the
// requests, failures and a lockout.
func TestAuthInProcess(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	usersFile, err := filepath.Abs("../examples/users.json")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	upstream := newEchoUpstream(t)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	err = loadCaddyfile(t, fmt.Sprintf(`{%s
	gatehouse {
		issuer %s
		store sqlite %s
		users_file %s
		lockout {
			max_failures 2
			throttle_after 10
		}
		client demo-service {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
		}
		client demo-app {
			public
			grant_types password
			scopes Service/Market
		}
	}
}

%s {
	gatehouse_identity
	handle /metrics {
		metrics
	}
	handle /api/* {
		gatehouse_auth Service/Market {
			header X-Auth-User {http.auth.user.id}
		}
		reverse_proxy %s
	}
}
`, testGlobalOptions, base, db, usersFile, demoSecretSHA256, base, upstream.dial()))
	if err != nil {
		t.Fatalf("loading the config: %v", err)
	}

	status, body := postForm(t, base+"/connect/token", "demo-service:demo-secret", url.Values{"grant_type": {"client_credentials"}})
	if status != http.StatusOK {
		t.Fatalf("client credentials: status %d: %s", status, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("no access token (%v): %s", err, body)
	}
	auth := http.Header{"Authorization": {"Bearer " + tok.AccessToken}, "X-Auth-User": {"admin"}}
	h := upstreamHeaders(t, request(t, http.MethodGet, base+"/api/quotes", auth))
	if got := strings.Join(h["X-Auth-User"], ","); got != "demo-service" {
		t.Errorf("upstream got X-Auth-User %q, want demo-service", got)
	}

	if status, body := postForm(t, base+"/connect/token", "demo-service:wrong", url.Values{"grant_type": {"client_credentials"}}); status != http.StatusUnauthorized {
		t.Errorf("wrong client secret: status %d: %s", status, body)
	}
	for range 2 {
		status, body := postForm(t, base+"/connect/token", "", url.Values{
			"grant_type": {"password"}, "username": {"demo"}, "password": {"wrong"}, "client_id": {"demo-app"},
		})
		if status != http.StatusBadRequest {
			t.Errorf("wrong password: status %d: %s", status, body)
		}
	}

	status, body = postForm(t, base+"/connect/revocation", "demo-service:demo-secret", url.Values{"token": {tok.AccessToken}})
	if status != http.StatusOK {
		t.Fatalf("revocation: status %d: %s", status, body)
	}
	// The route's verifier is the identity server's own, which re-reads
	// the revocations at once; a separate one would within 5s.
	deadline := time.Now().Add(10 * time.Second)
	var r response
	for {
		r = request(t, http.MethodGet, base+"/api/quotes", auth)
		if r.status != http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.status != http.StatusUnauthorized {
		t.Fatalf("revoked token: status %d, want 401", r.status)
	}
	if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="gatehouse", error="invalid_token", error_description="the access token was revoked"` {
		t.Errorf("WWW-Authenticate %q", got)
	}

	r = request(t, http.MethodGet, base+"/metrics", nil)
	text := string(r.body)
	for _, sample := range []string{
		`gatehouse_tokens_issued_total{client_id="demo-service",grant_type="client_credentials"}`,
		`gatehouse_token_failures_total{error="invalid_client"}`,
		`gatehouse_token_failures_total{error="invalid_grant"}`,
		`gatehouse_lockouts_total`,
		`gatehouse_verifications_total{outcome="revoked"}`,
	} {
		if got := metricValue(text, sample); got < 1 {
			t.Errorf("%s = %v, want at least 1", sample, got)
		}
	}
	if got := metricValue(text, "gatehouse_revocations_stale"); got != 0 {
		t.Errorf("gatehouse_revocations_stale = %v", got)
	}
	if strings.Contains(text, `username`) || strings.Contains(text, `"demo"`) || strings.Contains(text, tok.AccessToken) {
		t.Error("the metrics show a user name or a token")
	}
}
