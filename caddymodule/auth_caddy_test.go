package caddymodule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// The tests below attack route protection (gatehouse_auth,
// identity/verify) the way an attacker would: crafted requests, parallel
// bursts. All servers listen on 127.0.0.1 and every loop is bounded. The
// Caddy tests share Caddy's global state, so none of them runs in
// parallel.

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
// It failed when HeaderPolicy.Apply left the headers it sets or strips
// named in Connection.
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

// TestForgedIdentityHeadersNeverReachUpstream: spellings and burst of
// forged identity headers; none reaches the upstream. (It held when
// written.)
func TestForgedIdentityHeadersNeverReachUpstream(t *testing.T) {
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

// TestBearerParsing: tokens outside the Authorization header, several
// headers, odd schemes and whitespace, scope spelling. (It held when
// written.)
func TestBearerParsing(t *testing.T) {
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
