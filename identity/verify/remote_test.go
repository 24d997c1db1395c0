package verify_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// jwksServer serves an issuer's key set and counts requests; it can be
// taken down.
type jwksServer struct {
	*httptest.Server
	hits  atomic.Int64
	down  atomic.Bool
	mu    sync.Mutex
	body  []byte
	delay time.Duration
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	s := &jwksServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		time.Sleep(s.delay)
		if s.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// stepClock is a clock that stands still until advanced, safe for
// concurrent use: 2026-11-21 12:00 UTC at first.
func stepClock() (clock func() time.Time, advance func(time.Duration)) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	return clock, advance
}

// newRemoteVerifier is a verifier of an issuer's tokens whose key set it
// reads from srv (empty at first), on a stepping clock.
func newRemoteVerifier(t *testing.T) (advance func(time.Duration), issuer *verifytest.Issuer, srv *jwksServer, keys *verify.RemoteKeySet, v *verify.Verifier) {
	clock, advance := stepClock()
	issuer = verifytest.NewIssuer(t, issuerURL, clock)
	srv = newJWKSServer(t, []byte(`{"keys":[]}`))
	keys, err := verify.NewRemoteKeySet(t.Context(), verify.RemoteConfig{URL: srv.URL, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	v, err = verify.New(t.Context(), verify.Config{Issuer: issuerURL, Keys: keys, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	return advance, issuer, srv, keys, v
}

func TestRemoteKeySet(t *testing.T) {
	advance, issuer, srv, keys, v := newRemoteVerifier(t)
	tok := issuer.Token("alice")
	ctx := t.Context()

	// The issuer publishes its key only now: the first attempt falls in the
	// minimum interval after the initial fetch and is a cached miss.
	srv.set(issuer.JWKS())
	if _, err := v.Verify(ctx, tok); reasonOf(err) != verify.ReasonUnknownKey {
		t.Fatalf("inside the interval: %v", err)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("%d fetches, want 1", srv.hits.Load())
	}
	// A flood of unknown kids inside the interval fetches nothing.
	for range 50 {
		_, _ = keys.Key(ctx, "unknown")
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("unknown kids caused %d fetches", srv.hits.Load())
	}
	advance(6 * time.Second)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
	if srv.hits.Load() != 2 {
		t.Fatalf("%d fetches, want 2", srv.hits.Load())
	}

	// The issuer goes down: the last good set keeps serving, cold tokens too.
	srv.down.Store(true)
	advance(time.Minute)
	if _, err := keys.Key(ctx, "unknown"); !errors.Is(err, verify.ErrUnknownKey) {
		t.Fatalf("unknown kid while down: %v", err)
	}
	if _, err := v.Verify(ctx, issuer.Token("bob")); err != nil {
		t.Fatalf("last good set not serving: %v", err)
	}
	if attempts, failures := keys.Fetches(); attempts != 3 || failures != 1 {
		t.Fatalf("fetches %d, failures %d", attempts, failures)
	}
}

// Concurrent unknown kids share one fetch.
func TestRemoteKeySetSingleFlight(t *testing.T) {
	issuer := verifytest.NewIssuer(t, issuerURL, time.Now)
	srv := newJWKSServer(t, issuer.JWKS())
	srv.down.Store(true)
	keys, err := verify.NewRemoteKeySet(t.Context(), verify.RemoteConfig{URL: srv.URL, MinInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	srv.down.Store(false)
	srv.delay = 100 * time.Millisecond
	before := srv.hits.Load()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := keys.Key(t.Context(), issuer.Kid); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := srv.hits.Load() - before; n > 2 {
		t.Fatalf("%d fetches for 20 concurrent misses", n)
	}
}

// Before any successful fetch, an unreachable issuer is reported as such,
// not as an unknown key.
func TestRemoteKeySetUnavailable(t *testing.T) {
	srv := newJWKSServer(t, nil)
	srv.down.Store(true)
	keys, _ := verify.NewRemoteKeySet(t.Context(), verify.RemoteConfig{URL: srv.URL})
	issuer := verifytest.NewIssuer(t, issuerURL, time.Now)
	v, _ := verify.New(t.Context(), verify.Config{Issuer: issuerURL, Keys: keys})
	if _, err := v.Verify(t.Context(), issuer.Token("alice")); reasonOf(err) != verify.ReasonKeysUnavailable {
		t.Fatalf("got %v", err)
	}
}

func TestParseJWKS(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantN   int
		wantErr bool
	}{
		{"empty", `{"keys":[]}`, 0, false},
		{"encryption key skipped", `{"keys":[{"kty":"RSA","use":"enc","kid":"a","n":"AQAB","e":"AQAB"}]}`, 0, false},
		{"no kid skipped", `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, 0, false},
		{"weak RSA key", `{"keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}`, 0, true},
		{"EC point off the curve", `{"keys":[{"kty":"EC","kid":"a","crv":"P-256","x":"` + zeros(32) + `","y":"` + zeros(32) + `"}]}`, 0, true},
		{"unknown kty skipped", `{"keys":[{"kty":"OKP","kid":"a"}]}`, 0, false},
		{"not JSON", `<html>`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := verify.ParseJWKS([]byte(tt.body))
			if (err != nil) != tt.wantErr || len(keys) != tt.wantN {
				t.Fatalf("%d keys, %v", len(keys), err)
			}
		})
	}
}

func zeros(n int) string {
	b := make([]byte, (n*4+2)/3)
	for i := range b {
		b[i] = 'A'
	}
	return string(b)
}

// TestRemoteKeySetNoDowngrade: the default client follows a key set's
// redirects, at most 5, and never from https to http, where anyone on the
// way could answer with keys of their own.
func TestRemoteKeySetNoDowngrade(t *testing.T) {
	req := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tls, plain := req("https://idp.example/jwks"), req("http://idp.example/jwks")
	for _, tt := range []struct {
		name string
		to   *http.Request
		via  []*http.Request
		ok   bool
	}{
		{"https to https", tls, []*http.Request{tls}, true},
		{"http to https", tls, []*http.Request{plain}, true},
		{"http to http", plain, []*http.Request{plain}, true},
		{"https to http", plain, []*http.Request{tls}, false},
		{"https, https, then http", plain, []*http.Request{tls, tls}, false},
		{"a sixth", tls, []*http.Request{tls, tls, tls, tls, tls}, false},
	} {
		if err := verify.NoDowngrade(tt.to, tt.via); (err == nil) != tt.ok {
			t.Errorf("%s: error %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

// An unknown kid makes the remote key set fetch the issuer's JWKS on the
// request's context, and the attempt counts against MinInterval whatever
// its outcome. An attacker who sends a token with an unknown kid and drops
// the connection at once (the request's context is cancelled) aborts that
// fetch; for MinInterval every token of a key the issuer has just
// published is refused as unknown_key, and doing it again at each interval
// keeps a rotated issuer's tokens out until the scheduled refresh. A fetch
// must not be abortable by the one request that caused it (nor its failure
// then stop the next caller from fetching).
func TestRemoteKeySetFetchNotAbortedByCaller(t *testing.T) {
	advance, issuer, srv, _, v := newRemoteVerifier(t)
	// The issuer rotates: its new key is published now.
	srv.set(issuer.JWKS())
	advance(verify.DefaultJWKSMinInterval + time.Second)

	// The attacker: a token naming an unknown kid, on a request whose
	// context is already gone.
	h, c := issuer.Header(), issuer.Claims("attacker")
	h["kid"] = "attacker-kid"
	aborted, cancel := context.WithCancel(t.Context())
	cancel()
	_, _ = v.Verify(aborted, verifytest.Sign(h, c, issuer.Private))

	// A legitimate user a moment later, with a token of the new key.
	advance(100 * time.Millisecond)
	if _, err := v.Verify(t.Context(), issuer.Token("alice")); err != nil {
		t.Fatalf("a token of the newly published key refused after an attacker aborted the key-set fetch: %v (fetches %d)",
			err, srv.hits.Load())
	}
}
