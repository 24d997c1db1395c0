package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Requests through a gatehouse that guards a route with gatehouse_auth in
// front of an upstream, a fake backend that records what reaches it, as
// guardConfig (configs_test.go) sets it up.

// guardRequest sends GET /market/quotes to b with token as a bearer token
// (none if empty) and the extra headers.
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

// upstream is a backend behind a guarding gatehouse: it records the
// requests it gets.
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
