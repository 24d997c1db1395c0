package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
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

// startInProcess runs a Caddy with the in-process identity server and a
// route it protects, in front of an echoUpstream.
func startInProcess(t *testing.T) (base string, up *echoUpstream) {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	usersFile, err := filepath.Abs("../examples/users.json")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	up = newEchoUpstream(t)
	port := freePort(t)
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	err = loadCaddyfile(t, fmt.Sprintf(`{%s
	gatehouse {
		issuer %s
		store sqlite %s
		users_file %s
		client demo-service {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
			introspect
		}
		client other-service {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
		}
		client demo-app {
			public
			grant_types password refresh_token
			scopes Service/Market openid profile email offline_access
		}
	}
}

%s {
	gatehouse_identity
	handle /api/* {
		gatehouse_auth Service/Market {
			header X-Auth-User {http.auth.user.id}
		}
		reverse_proxy %s
	}
}
`, testGlobalOptions, base, db, usersFile, demoSecretSHA256, demoSecretSHA256, base, up.dial()))
	if err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	return base, up
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	Scope        string `json:"scope"`
}

func passwordGrant(t *testing.T, base string) tokenResponse {
	t.Helper()
	status, body := postForm(t, base+"/connect/token", "", url.Values{
		"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"}, "client_id": {"demo-app"},
		"scope": {"Service/Market openid profile offline_access"},
	})
	if status != http.StatusOK {
		t.Fatalf("password grant: %d %s", status, body)
	}
	var tr tokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token response %s: %v", body, err)
	}
	return tr
}

func bearerGet(t *testing.T, u, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenServicesRefuseMisuse: introspection, revocation and userinfo
// against the in-process identity server, attacked with tokens of the
// wrong type, clients without the right, tokens where they do not belong
// and a burst racing revocation against use. (It held when written.)
func TestTokenServicesRefuseMisuse(t *testing.T) {
	base, _ := startInProcess(t)
	tr := passwordGrant(t, base)

	t.Run("refresh token and ID token are no access tokens", func(t *testing.T) {
		if tr.RefreshToken == "" || tr.IDToken == "" {
			t.Skipf("no refresh or ID token: %+v", tr)
		}
		for name, tok := range map[string]string{"refresh": tr.RefreshToken, "id": tr.IDToken} {
			if s := bearerGet(t, base+"/api/x", tok); s != http.StatusUnauthorized {
				t.Errorf("%s token on a protected route: %d", name, s)
			}
			if s := bearerGet(t, base+"/connect/userinfo", tok); s != http.StatusUnauthorized {
				t.Errorf("%s token at userinfo: %d", name, s)
			}
		}
	})

	t.Run("introspection needs an authenticated, allowed client", func(t *testing.T) {
		status, _ := postForm(t, base+"/connect/introspect", "", url.Values{"token": {tr.AccessToken}})
		if status != http.StatusUnauthorized {
			t.Errorf("anonymous introspection: %d", status)
		}
		status, _ = postForm(t, base+"/connect/introspect", "", url.Values{"token": {tr.AccessToken}, "client_id": {"demo-app"}})
		if status == http.StatusOK {
			t.Errorf("public client introspected")
		}
		status, _ = postForm(t, base+"/connect/introspect", "other-service:demo-secret", url.Values{"token": {tr.AccessToken}})
		if status == http.StatusOK {
			t.Errorf("a client without introspect introspected")
		}
		status, _ = postForm(t, base+"/connect/introspect", "demo-service:wrong", url.Values{"token": {tr.AccessToken}})
		if status != http.StatusUnauthorized {
			t.Errorf("wrong secret: %d", status)
		}
		status, body := postForm(t, base+"/connect/introspect", "demo-service:demo-secret",
			url.Values{"token": {tr.RefreshToken}, "token_type_hint": {"refresh_token"}})
		if status != http.StatusOK || !strings.Contains(string(body), `"active":false`) {
			t.Errorf("another client's refresh token introspected: %d %s", status, body)
		}
	})

	t.Run("userinfo needs openid and the header", func(t *testing.T) {
		status, body := postForm(t, base+"/connect/token", "demo-service:demo-secret", url.Values{"grant_type": {"client_credentials"}})
		if status != http.StatusOK {
			t.Fatalf("client credentials: %d %s", status, body)
		}
		var cc tokenResponse
		json.Unmarshal(body, &cc)
		if s := bearerGet(t, base+"/connect/userinfo", cc.AccessToken); s != http.StatusForbidden {
			t.Errorf("userinfo without openid: %d", s)
		}
		status, _ = postForm(t, base+"/connect/userinfo", "", url.Values{"access_token": {tr.AccessToken}})
		if status != http.StatusUnauthorized {
			t.Errorf("userinfo with the token in the form body: %d", status)
		}
		if s := bearerGet(t, base+"/connect/userinfo?access_token="+tr.AccessToken, tr.AccessToken); s != http.StatusBadRequest {
			t.Errorf("userinfo with the token in the URL: %d", s)
		}
	})

	t.Run("another client cannot revoke", func(t *testing.T) {
		status, _ := postForm(t, base+"/connect/revocation", "demo-service:demo-secret", url.Values{"token": {tr.AccessToken}})
		if status != http.StatusOK {
			t.Errorf("revocation: %d", status)
		}
		status, _ = postForm(t, base+"/connect/revocation", "demo-service:demo-secret", url.Values{"token": {tr.RefreshToken}})
		if status != http.StatusOK {
			t.Errorf("revocation: %d", status)
		}
		if s := bearerGet(t, base+"/api/x", tr.AccessToken); s != http.StatusOK {
			t.Errorf("another client revoked demo-app's token: %d", s)
		}
	})

	// A burst of use racing the revocation: once the revocation answered
	// 200, no request sent after may pass, on the route or at userinfo.
	raceRevocation := func(t *testing.T, revoke url.Values, token string) {
		var revokedAt atomic.Int64 // unix nanos; 0 until the revocation answered
		var late atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := base + "/api/x"
				if w%2 == 1 {
					target = base + "/connect/userinfo"
				}
				for range 200 {
					select {
					case <-stop:
						return
					default:
					}
					sent := time.Now().UnixNano()
					s := bearerGet(t, target, token)
					if r := revokedAt.Load(); r != 0 && sent > r && s == http.StatusOK {
						late.Add(1)
					}
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		status, body := postForm(t, base+"/connect/revocation", "", revoke)
		revokedAt.Store(time.Now().UnixNano())
		if status != http.StatusOK {
			t.Errorf("revocation: %d %s", status, body)
		}
		time.Sleep(300 * time.Millisecond)
		close(stop)
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Errorf("%d requests sent after the revocation answered were let through", n)
		}
		status, body = postForm(t, base+"/connect/introspect", "demo-service:demo-secret", url.Values{"token": {token}})
		if status != http.StatusOK || !strings.Contains(string(body), `"active":false`) {
			t.Errorf("introspection after revocation: %d %s", status, body)
		}
	}
	t.Run("burst racing access-token revocation", func(t *testing.T) {
		tr2 := passwordGrant(t, base)
		raceRevocation(t, url.Values{"token": {tr2.AccessToken}, "client_id": {"demo-app"}}, tr2.AccessToken)
	})
	t.Run("burst racing refresh-token (family) revocation", func(t *testing.T) {
		tr3 := passwordGrant(t, base)
		raceRevocation(t, url.Values{"token": {tr3.RefreshToken}, "client_id": {"demo-app"}, "token_type_hint": {"access_token"}}, tr3.AccessToken)
	})
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestRevokedTokenStaysRevokedInLeeway: a verifier accepts a token until
// exp + its leeway (10 s by default, up to verify.MaxLeeway). A revocation
// stored until exp alone (as it was) was dropped by the verifier's full
// reload and by the purge at exp, so in [exp, exp+leeway) a revoked token
// was accepted again by gatehouse_auth and introspection. The identity
// server now stores a revocation until exp + verify.MaxLeeway
// (identity.TestRevocation checks that); here, that such a revocation holds
// through the window, reload and purge included.
func TestRevokedTokenStaysRevokedInLeeway(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t0 := time.Now().Truncate(time.Second)
	clk := &testClock{t: t0}
	is := verifytest.NewIssuer(t, testIssuerURL, clk.Now)
	v, err := verify.New(ctx, verify.Config{Issuer: is.URL, Keys: is, Revocations: st, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	claims := is.Claims("victim", "Service/Market")
	claims["exp"] = t0.Add(time.Hour).Unix()
	token := verifytest.Sign(is.Header(), claims, is.Private)
	id, err := v.Verify(ctx, token)
	if err != nil {
		t.Fatalf("good token refused: %v", err)
	}
	// What revokeAccess does (identity/revoke.go).
	if err := st.RevokeAccessToken(ctx, id.JTI, id.Expiry.Add(verify.MaxLeeway), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, token); err == nil {
		t.Fatal("revoked token accepted right after revocation")
	}

	// 5 s past exp: still inside the default 10 s leeway. A full reload is
	// due (more than 10 minutes since the last), as it would be on the
	// verifier's own schedule.
	clk.Set(id.Expiry.Add(5 * time.Second))
	if err := v.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, token); err == nil {
		t.Errorf("the revoked token is accepted again at exp+5s (inside the verifier's leeway): the " +
			"full revocation reload dropped its revocation at exp")
	}
	// The purge at the same instant deletes the revocation row, so the
	// authoritative check of introspection says "not revoked".
	if _, err := st.DeleteExpired(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	revoked, err := st.AccessTokenRevoked(ctx, id.JTI, "", id.Subject, id.IssuedAt)
	if err != nil {
		t.Fatal(err)
	}
	if !revoked {
		t.Errorf("after the purge at exp+5s the store says the token is not revoked, while the verifier " +
			"still accepts it: introspection would answer active:true for a revoked token")
	}
}
