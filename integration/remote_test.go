package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds of the waits of the remote-JWKS test.
const (
	cliTimeout    = 60 * time.Second // one `gatehouse keys` command
	rotateTimeout = 15 * time.Second // until the issuer publishes a rotated key
	// refetchTimeout is how long the guard may take to accept a token of a
	// new key: it refetches the key set on an unknown kid at most every
	// 5s (verify.DefaultJWKSMinInterval), so 15s leaves room.
	refetchTimeout = 15 * time.Second
	pollInterval   = 200 * time.Millisecond
)

// TestRemoteJWKS runs two gatehouses: A, the demo identity server, and B, a
// guard in remote-only mode (no issuer of its own) that protects a route
// with gatehouse_auth, checking A's tokens against A's JWKS over HTTP. It
// rotates A's signing key with the CLI, then stops A.
func TestRemoteJWKS(t *testing.T) {
	a := StartGatehouseWith(t, Options{Config: issuerConfig(t)})
	up := newUpstream(t)
	b := StartGatehouseWith(t, Options{
		Config:      guardConfig(t, a.Issuer, a.JWKSURI(t), up.URL),
		ReadyPath:   "/",
		ReadyStatus: http.StatusUnauthorized, // gatehouse_auth answers: B serves
	})
	// Each log must hold none of the tokens, secrets and passwords of either.
	a.AlsoCheckSecretsOf(b)
	b.AlsoCheckSecretsOf(a)

	demo := subjectOf(t, "demo")
	old := a.PasswordGrant(t, "demo", "demo")
	oldUnseen := a.PasswordGrant(t, "demo", "demo") // shown to B only once A is down
	oldKid := kidOf(t, old.AccessToken)

	resp, body := a.PostToken(t, url.Values{
		"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"},
		"client_id": {publicClient}, "scope": {"openid"},
	}, "", "")
	openidOnly := decodeToken(t, resp, body)
	resp, body = a.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, serviceSecret)
	service := decodeToken(t, resp, body)

	spoofed := http.Header{"X-User-Id": {"spoofed-user"}, "X_User_Id": {"spoofed-user"}, "x-user-id": {"spoofed-user"}}
	for _, tc := range []struct {
		name      string
		token     string
		status    int
		challenge string // WWW-Authenticate, exactly, or "" for any...
		errorCode string // ...holding this error code
		userID    string // X-User-Id the upstream must see on success
	}{
		{name: "token of A", token: old.AccessToken, status: http.StatusOK, userID: demo},
		{name: "client credentials token of A", token: service.AccessToken, status: http.StatusOK, userID: serviceClient},
		{name: "no token", status: http.StatusUnauthorized, challenge: `Bearer realm="gatehouse"`},
		{name: "token without Service/Market", token: openidOnly.AccessToken, status: http.StatusForbidden, errorCode: "insufficient_scope"},
		{name: "tampered claims", token: tamperClaims(t, old.AccessToken, "sub", subjectOf(t, "trader")), status: http.StatusUnauthorized, errorCode: "invalid_token"},
		{name: "tampered signature", token: tamperSignature(t, old.AccessToken), status: http.StatusUnauthorized, errorCode: "invalid_token"},
		{name: "ID token", token: old.IDToken, status: http.StatusUnauthorized, errorCode: "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.token == "" && tc.status == http.StatusOK {
				t.Fatal("the grant returned no token")
			}
			checkGuard(t, b, up, tc.token, spoofed, tc.status, tc.challenge, tc.errorCode, tc.userID)
		})
	}

	// A key rotation on A, done by the CLI on A's store: A picks it up
	// within its check_interval (1s), B on the first token of the new key.
	rotateKeys(t, a)
	kids := waitForKids(t, a, 2)
	if !slices.Contains(kids, oldKid) {
		t.Fatalf("after the rotation A's JWKS has kids %q, without the old %q", kids, oldKid)
	}
	rotated := a.PasswordGrant(t, "demo", "demo")
	newKid := kidOf(t, rotated.AccessToken)
	if newKid == oldKid {
		t.Fatalf("after `keys rotate --immediately` A still signs with kid %q", oldKid)
	}
	if !slices.Contains(kids, newKid) {
		t.Fatalf("A signs with kid %q, which its JWKS (%q) does not publish", newKid, kids)
	}
	took := waitForGuard(t, b, rotated.AccessToken)
	t.Logf("B accepted a token of the new key %s after %v", newKid, took.Round(time.Millisecond))
	checkGuard(t, b, up, old.AccessToken, spoofed, http.StatusOK, "", "", demo)
	newUnseen := a.PasswordGrant(t, "demo", "demo") // shown to B only once A is down
	if kidOf(t, newUnseen.AccessToken) != newKid {
		t.Fatalf("A's signing key changed again: %q", kidOf(t, newUnseen.AccessToken))
	}

	// A down: B keeps its last good key set, even after a refetch (for an
	// unknown kid) fails, and its cache of verified tokens; so tokens it
	// has seen and tokens it has not still pass.
	a.Stop()
	unknownKid := tamperHeader(t, newUnseen.AccessToken, "kid", "integration-unknown-kid")
	took = waitForFetchFailure(t, b, up, unknownKid)
	t.Logf("B tried to refetch A's JWKS and failed after %v", took.Round(time.Millisecond))
	for _, tc := range []struct{ name, token string }{
		{"old key, seen", old.AccessToken},
		{"new key, seen", rotated.AccessToken},
		{"old key, unseen", oldUnseen.AccessToken},
		{"new key, unseen", newUnseen.AccessToken},
	} {
		t.Run("issuer down/"+tc.name, func(t *testing.T) {
			checkGuard(t, b, up, tc.token, spoofed, http.StatusOK, "", "", demo)
		})
	}
	t.Run("issuer down/tampered", func(t *testing.T) {
		forged := tamperClaims(t, newUnseen.AccessToken, "scope", "Service/Market Service/Trading")
		checkGuard(t, b, up, forged, spoofed, http.StatusUnauthorized, "", "invalid_token", "")
	})

	t.Run("metrics", func(t *testing.T) {
		metrics := scrapeMetrics(t, b)
		if n := metricValue(metrics, `gatehouse_jwks_fetches_total{result="success"}`); n < 2 {
			t.Errorf("gatehouse_jwks_fetches_total{result=\"success\"} = %v, want >= 2 (start, new kid)", n)
		}
		if n := metricValue(metrics, `gatehouse_jwks_fetches_total{result="failure"}`); n < 1 {
			t.Errorf("gatehouse_jwks_fetches_total{result=\"failure\"} = %v, want >= 1 (A down)", n)
		}
		if n := metricValue(metrics, `gatehouse_verifications_total{outcome="verified"}`); n < 6 {
			t.Errorf("gatehouse_verifications_total{outcome=\"verified\"} = %v, want >= 6", n)
		}
		for _, outcome := range []string{"cache_hit", "bad_signature", "unknown_key"} {
			if n := metricValue(metrics, `gatehouse_verifications_total{outcome="`+outcome+`"}`); n < 1 {
				t.Errorf("gatehouse_verifications_total{outcome=%q} = %v, want >= 1", outcome, n)
			}
		}
		if t.Failed() {
			t.Logf("B's metrics:\n%s", metrics)
		}
		for _, leak := range findLeaks(metrics, b.Secrets(), demoPasswords) {
			t.Errorf("B's metrics leak %s", leak)
		}
	})
}

// issuerConfig writes gatehouse A's config: the demo with all logs on and
// a signing-key check every second, so that a rotation made by the CLI is
// picked up at once.
func issuerConfig(t testing.TB) string {
	t.Helper()
	return verboseDemoConfig(t, "issuer", "signing_keys {\n\t\t\tcheck_interval 1s\n\t\t}\n")
}

// guardConfig writes gatehouse B's config: remote-only mode (a verifier,
// no issuer), debug and access logs, and one site that passes requests
// with a Service/Market token to upstream with the subject in X-User-Id.
func guardConfig(t testing.TB, issuer, jwksURL, upstream string) string {
	t.Helper()
	config := fmt.Sprintf(`{
	admin {$GATEHOUSE_ADMIN}
	persist_config off
	debug

	gatehouse {
		verifier {
			issuer %s
			jwks_url %s
		}
	}
}

http://:{$GATEHOUSE_HTTP_PORT} {
	bind {$GATEHOUSE_BIND}
	log
	gatehouse_auth Service/Market {
		header X-User-Id {http.auth.user.id}
	}
	reverse_proxy %s
}
`, issuer, jwksURL, strings.TrimPrefix(upstream, "http://"))
	return writeConfig(t, "guard", config)
}

// upstream is the backend behind B: it records the requests it gets.
type upstream struct {
	URL string

	mu   sync.Mutex
	reqs []http.Header
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	up := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		up.reqs = append(up.reqs, r.Header.Clone())
		up.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "upstream ok")
	}))
	t.Cleanup(srv.Close)
	up.URL = srv.URL
	return up
}

// received returns how many requests reached the upstream and the headers
// of the last one.
func (up *upstream) received() (int, http.Header) {
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.reqs) == 0 {
		return 0, nil
	}
	return len(up.reqs), up.reqs[len(up.reqs)-1]
}

// guardRequest sends GET / to b with token as a bearer token (none if
// empty) and the extra headers.
func guardRequest(t testing.TB, b *Gatehouse, token string, extra http.Header) (*http.Response, []byte) {
	t.Helper()
	req := mustRequest(t, http.MethodGet, b.Issuer+"/market/quotes", nil)
	for name, values := range extra {
		req.Header[name] = values // as sent, not canonicalized
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return b.Do(t, req)
}

// checkGuard sends token through b and checks the answer: on 200 the
// upstream got exactly one X-User-Id, userID, and none of the client's;
// otherwise it got nothing, and WWW-Authenticate is challenge (when set)
// or holds errorCode.
func checkGuard(t testing.TB, b *Gatehouse, up *upstream, token string, extra http.Header, status int, challenge, errorCode, userID string) {
	t.Helper()
	before, _ := up.received()
	resp, body := guardRequest(t, b, token, extra)
	after, hdr := up.received()
	if resp.StatusCode != status {
		t.Fatalf("status = %s, want %d; WWW-Authenticate %q; body %s", resp.Status, status, resp.Header.Get("WWW-Authenticate"), body)
	}
	if status == http.StatusOK {
		if after != before+1 {
			t.Fatalf("the upstream got %d requests, want 1", after-before)
		}
		if got := hdr.Values("X-User-Id"); !slices.Equal(got, []string{userID}) {
			t.Errorf("the upstream got X-User-Id %q, want [%q]", got, userID)
		}
		for name := range hdr {
			if strings.EqualFold(strings.ReplaceAll(name, "_", "-"), "X-User-Id") && name != "X-User-Id" {
				t.Errorf("the client's %s reached the upstream: %q", name, hdr[name])
			}
		}
		if string(body) != "upstream ok" {
			t.Errorf("body = %q, want the upstream's", body)
		}
		return
	}
	if after != before {
		t.Errorf("a refused request reached the upstream (%d requests)", after-before)
	}
	got := resp.Header.Values("WWW-Authenticate")
	if len(got) != 1 {
		t.Fatalf("WWW-Authenticate = %q, want one challenge", got)
	}
	if challenge != "" && got[0] != challenge {
		t.Errorf("WWW-Authenticate = %q, want %q", got[0], challenge)
	}
	if !strings.HasPrefix(got[0], `Bearer realm="gatehouse"`) {
		t.Errorf("WWW-Authenticate = %q, want a Bearer challenge of realm gatehouse", got[0])
	}
	if errorCode != "" && !strings.Contains(got[0], `error="`+errorCode+`"`) {
		t.Errorf("WWW-Authenticate = %q, want error=%q", got[0], errorCode)
	}
}

// waitForGuard sends token to b until it passes (B refetches the key set
// for an unknown kid at most every few seconds) and returns how long it
// took.
func waitForGuard(t testing.TB, b *Gatehouse, token string) time.Duration {
	t.Helper()
	began := time.Now()
	deadline := began.Add(refetchTimeout)
	for {
		resp, body := guardRequest(t, b, token, nil)
		if resp.StatusCode == http.StatusOK {
			return time.Since(began)
		}
		if resp.StatusCode != http.StatusUnauthorized || time.Now().After(deadline) {
			t.Fatalf("B did not accept a token of the new key within %v: %s, WWW-Authenticate %q, body %s",
				refetchTimeout, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
		}
		time.Sleep(pollInterval)
	}
}

// waitForFetchFailure sends token, whose kid B does not know, to b until
// B's metrics count a failed fetch of the key set (B refetches for an
// unknown kid at most every few seconds); every answer must be 401
// invalid_token. It returns how long that took.
func waitForFetchFailure(t testing.TB, b *Gatehouse, up *upstream, token string) time.Duration {
	t.Helper()
	const series = `gatehouse_jwks_fetches_total{result="failure"}`
	before := metricValue(scrapeMetrics(t, b), series)
	began := time.Now()
	deadline := began.Add(refetchTimeout)
	for {
		checkGuard(t, b, up, token, nil, http.StatusUnauthorized, "", "invalid_token", "")
		if metricValue(scrapeMetrics(t, b), series) > before {
			return time.Since(began)
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not try to refetch the key set within %v of a token with an unknown kid", refetchTimeout)
		}
		time.Sleep(pollInterval)
	}
}

// rotateKeys runs `gatehouse keys rotate --immediately` on a's config and
// store, as an operator would.
func rotateKeys(t testing.TB, g *Gatehouse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "keys", "rotate", "--immediately", "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse keys rotate --immediately: %v\n%s", err, out)
	}
	t.Logf("gatehouse keys rotate --immediately:\n%s", bytes.TrimSpace(out))
}

// waitForKids polls g's JWKS until it publishes n keys and returns their
// kids.
func waitForKids(t testing.TB, g *Gatehouse, n int) []string {
	t.Helper()
	deadline := time.Now().Add(rotateTimeout)
	for {
		kids := jwksKids(t, g)
		if len(kids) == n {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's JWKS has kids %q after %v, want %d keys", kids, rotateTimeout, n)
		}
		time.Sleep(pollInterval)
	}
}

// scrapeMetrics reads /metrics on g's admin endpoint.
func scrapeMetrics(t testing.TB, g *Gatehouse) []byte {
	t.Helper()
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, "http://"+g.Admin+"/metrics", nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics on the admin endpoint: %s: %s", resp.Status, body)
	}
	return body
}

// metricValue returns the value of the sample named series (name and
// labels as Prometheus prints them) in a text exposition, or -1.
func metricValue(metrics []byte, series string) float64 {
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}
