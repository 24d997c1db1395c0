package caddymodule

// Attack tests against route protection (gatehouse_auth, identity/verify)
// and the identity server's introspection, revocation and userinfo
// endpoints, made the way an attacker makes them (crafted requests,
// parallel bursts). The three tests not named TestAttack* found bugs, now
// fixed, and say what failed before; the TestAttack* ones held.
//
// All servers listen on 127.0.0.1; every loop is bounded. The Caddy tests
// share Caddy's global state, so none of them runs in parallel.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// trailerUpstream answers with the request headers AND the request
// trailers it got (after reading the body to EOF, when net/http fills
// them in).
type trailerUpstream struct {
	*httptest.Server
	hits atomic.Int64
}

type seenByUpstream struct {
	Header  http.Header `json:"header"`
	Trailer http.Header `json:"trailer"`
}

func newTrailerUpstream(t *testing.T) *trailerUpstream {
	u := new(trailerUpstream)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seenByUpstream{r.Header, r.Trailer})
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *trailerUpstream) dial() string { return strings.TrimPrefix(u.URL, "http://") }

// rawRequest writes raw bytes as one HTTP/1.1 request to addr and reads
// one response.
func rawRequest(t *testing.T, addr, raw string) response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, body}
}

func decodeSeen(t *testing.T, r response) seenByUpstream {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var s seenByUpstream
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("upstream answer %q: %v", r.body, err)
	}
	return s
}

// startRemoteGuard runs a Caddy in remote-only mode guarding /api/* with
// identity headers, in front of a trailerUpstream.
func startRemoteGuard(t *testing.T) (*verifytest.Issuer, *trailerUpstream, string) {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	is := verifytest.NewIssuer(t, testIssuerURL, time.Now)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(is.JWKS())
	}))
	t.Cleanup(jwks.Close)
	up := newTrailerUpstream(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	err := loadCaddyfile(t, fmt.Sprintf(`{%s
	gatehouse {
		verifier {
			issuer %s
			jwks_url %s/jwks
		}
	}
}

http://%s {
	handle /api/* {
		gatehouse_auth Service/Market {
			header X-Auth-User {http.auth.user.id}
			header X-Auth-Client {http.auth.user.client_id}
			header X-Auth-Scopes {http.auth.user.scopes}
			header X-Auth-Name {http.auth.user.claims.name}
			strip_header X-Auth-Role
			strip_authorization
		}
		reverse_proxy %s
	}
}
`, testGlobalOptions, is.URL, jwks.URL, addr, up.dial()))
	if err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	return is, up, addr
}

// TestConnectionHeaderCannotDropIdentity: a client names the identity
// headers in its own Connection header. gatehouse_auth sets X-Auth-User
// etc. on the request, then reverse_proxy deletes every header the
// Connection header nominates (RFC 9110 §7.6.1 hop-by-hop handling), so
// the upstream receives an authenticated request WITHOUT the gateway's
// identity headers. A backend that reads "no X-Auth-User" as an
// anonymous/internal/trusted caller, or that defaults a missing
// X-Auth-Scopes to unrestricted, is fooled; the gateway's promise that the
// upstream sees the identity it vouches for is broken.
func TestConnectionHeaderCannotDropIdentity(t *testing.T) {
	is, _, addr := startRemoteGuard(t)
	token := is.Token("alice", "Service/Market")
	for _, conn := range []string{
		"X-Auth-User, X-Auth-Scopes, X-Auth-Client",
		"x_auth_user", // only the exact (case-insensitive) name is dropped by Caddy
		"close, X-Auth-User",
	} {
		t.Run(conn, func(t *testing.T) {
			raw := "GET /api/quotes HTTP/1.1\r\nHost: " + addr + "\r\n" +
				"Authorization: Bearer " + token + "\r\n" +
				"X-Auth-User: admin\r\n" +
				"Connection: " + conn + "\r\n\r\n"
			seen := decodeSeen(t, rawRequest(t, addr, raw))
			if got := seen.Header.Values("X-Auth-User"); strings.Join(got, ",") == "admin" {
				t.Fatalf("the client's forged X-Auth-User reached the upstream")
			}
			if strings.EqualFold(conn, "x_auth_user") {
				// Caddy deletes "x_auth_user" (no canonical match): the identity stays.
				if got := seen.Header.Get("X-Auth-User"); got != "alice" {
					t.Errorf("X-Auth-User %q, want alice", got)
				}
				return
			}
			if got := seen.Header.Get("X-Auth-User"); got != "alice" {
				t.Errorf("the upstream got an authenticated request with X-Auth-User %q (want \"alice\"): "+
					"the client's Connection header made reverse_proxy drop the identity header gatehouse_auth set "+
					"(upstream headers: %v)", got, seen.Header)
			}
		})
	}
}

// TestTrailerNamingIdentityRefused: a client that sends its body chunked
// and announces X-Auth-User / X-Auth-Role as request trailers is refused
// (400), and the upstream is not reached. It failed when gatehouse_auth
// rewrote only the header section: reverse_proxy forwarded the trailers,
// and the upstream received the client's forged identity fields there
// (servers that merge trailers into the header fields take them).
func TestTrailerNamingIdentityRefused(t *testing.T) {
	is, up, addr := startRemoteGuard(t)
	token := is.Token("alice", "Service/Market")
	for _, announced := range []string{"X-Auth-User, X-Auth-Role", "x-auth-role", "X-Other, X-AUTH-USER"} {
		raw := "POST /api/quotes HTTP/1.1\r\nHost: " + addr + "\r\n" +
			"Authorization: Bearer " + token + "\r\n" +
			"Content-Type: text/plain\r\n" +
			"Transfer-Encoding: chunked\r\n" +
			"Trailer: " + announced + "\r\n\r\n" +
			"5\r\nhello\r\n0\r\n" +
			"X-Auth-User: admin\r\n" +
			"X-Auth-Role: admin\r\n\r\n"
		before := up.hits.Load()
		if r := rawRequest(t, addr, raw); r.status != http.StatusBadRequest {
			t.Errorf("Trailer: %s: status %d %s, want 400", announced, r.status, r.body)
		}
		if up.hits.Load() != before {
			t.Errorf("Trailer: %s: the upstream was reached", announced)
		}
	}
	// Announcing another trailer and sending a protected one anyway
	// (net/http keeps every trailer sent): the body fails at its end, and the
	// upstream never gets the trailer. It passed before the body guard.
	undeclared := "POST /api/quotes HTTP/1.1\r\nHost: " + addr + "\r\n" +
		"Authorization: Bearer " + token + "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" +
		"5\r\nhello\r\n0\r\nX-Checksum: 1\r\nX-Auth-User: admin\r\nX-Auth-Role: admin\r\n\r\n"
	if r := rawRequest(t, addr, undeclared); r.status == http.StatusOK {
		var seen seenByUpstream
		_ = json.Unmarshal(r.body, &seen)
		t.Errorf("an undeclared protected trailer: 200, the upstream saw trailers %v", seen.Trailer)
	}
	// A trailer the policy does not protect passes.
	raw := "POST /api/quotes HTTP/1.1\r\nHost: " + addr + "\r\n" +
		"Authorization: Bearer " + token + "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" +
		"5\r\nhello\r\n0\r\nX-Checksum: 1\r\n\r\n"
	decodeSeen(t, rawRequest(t, addr, raw))
}

// TestAttackForgedIdentityHeaders: spellings and burst of forged identity
// headers; none reaches the upstream.
func TestAttackForgedIdentityHeaders(t *testing.T) {
	is, up, addr := startRemoteGuard(t)
	claims := is.Claims("alice", "Service/Market")
	claims["name"] = "Alice\r\nX-Auth-Role: admin" // header splitting through a claim
	token := verifytest.Sign(is.Header(), claims, is.Private)

	forged := "X-Auth-User: admin\r\nx-auth-user: root\r\nX_Auth_User: admin\r\nX_AUTH_USER: admin\r\n" +
		"X-Auth-Role: admin\r\nx_auth_role: admin\r\nX-Auth-Scopes: Service/Admin\r\nX-Auth-Client: evil\r\n" +
		"X-Auth-User: admin,\r\n evil\r\n" // obs-fold continuation
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw := "GET /api/quotes/" + fmt.Sprint(i) + " HTTP/1.1\r\nHost: " + addr + "\r\n" +
				"Authorization: Bearer " + token + "\r\n" + forged + "\r\n"
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(conn, raw)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusBadRequest {
				return // the server refused the folded header: fine
			}
			var s seenByUpstream
			_ = json.Unmarshal(body, &s)
			for name, vs := range s.Header {
				lower := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
				if !strings.HasPrefix(lower, "x-auth-") {
					continue
				}
				for _, v := range vs {
					if strings.Contains(v, "admin") || strings.Contains(v, "root") || strings.Contains(v, "evil") ||
						strings.Contains(v, "Service/Admin") || strings.Contains(v, "\n") {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("upstream got %s: %q", name, v))
						mu.Unlock()
					}
				}
			}
			if s.Header.Get("Authorization") != "" {
				mu.Lock()
				failures = append(failures, "Authorization reached the upstream despite strip_authorization")
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, f := range failures[:min(len(failures), 5)] {
		t.Error(f)
	}
	_ = up
}

// TestAttackBearerParsing: tokens outside the Authorization header, several
// headers, odd schemes and whitespace, scope spelling.
func TestAttackBearerParsing(t *testing.T) {
	is, up, addr := startRemoteGuard(t)
	base := "http://" + addr
	good := is.Token("alice", "Service/Market")
	hits := up.hits.Load()

	for _, c := range []struct {
		name   string
		method string
		path   string
		header http.Header
		body   string
		want   int
	}{
		{"token in the query", "GET", "/api/q?access_token=" + good, nil, "", 401},
		{"token in a form body", "POST", "/api/q", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "access_token=" + good, 401},
		{"two Authorization headers", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + good, "Bearer junk"}}, "", 400},
		{"two tokens in one header", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + good + ", Bearer " + good}}, "", 400},
		{"Basic scheme", "GET", "/api/q", http.Header{"Authorization": {"Basic " + good}}, "", 400},
		{"Bearer with a tab", "GET", "/api/q", http.Header{"Authorization": {"Bearer\t" + good}}, "", 400},
		{"BearerX scheme", "GET", "/api/q", http.Header{"Authorization": {"BearerX " + good}}, "", 400},
		{"huge token", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + strings.Repeat("a", 9<<10)}}, "", 401},
		{"lower-case scope", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + is.Token("bob", "service/market")}}, "", 403},
		{"scope with a trailing space char", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + is.Token("bob", "Service/Market\u3000")}}, "", 401},
		{"scope with a tab", "GET", "/api/q", http.Header{"Authorization": {"Bearer " + is.Token("bob", "x\tService/Market")}}, "", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			for k, v := range c.header {
				req.Header[k] = v
			}
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want && !(c.want == 401 && resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge) {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
		})
	}
	if n := up.hits.Load(); n != hits {
		t.Errorf("%d refused requests reached the upstream", n-hits)
	}
}

// --- the in-process identity server ---------------------------------------

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

// TestAttackTokenServices: introspection, revocation and userinfo against
// the in-process identity server, with a burst racing revocation against
// use.
func TestAttackTokenServices(t *testing.T) {
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
