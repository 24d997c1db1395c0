package iqengine_test

// The request to the upstream (engine.go): a write's fate when the
// upstream answers badly or not at all, what a caller going away cancels,
// and what never leaves the gateway. "(It held when written.)" marks a
// defence an attack found holding.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
)

func fwd(t *testing.T, url string, client *http.Client, timeout time.Duration) *iqengine.Engine {
	t.Helper()
	e, err := iqengine.New(iqengine.Config{URL: url, Catalog: catalog, Timeout: timeout, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func insert() engine.ForwardRequest {
	return engine.ForwardRequest{IQL: "INSERT INTO Order (Code) VALUES ('A')", Token: "t", Write: true}
}

// TestInsertAnswered5xxFateUnknown: a 502, 503 or 504 to an insert may come
// from a proxy in front of the upstream, whose backend may still run it,
// and a 500 from an upstream that failed in its midst: the insert's fate
// is unknown (ErrFateUnknown), not "not applied"; a 4xx applied nothing.
func TestInsertAnswered5xxFateUnknown(t *testing.T) {
	for _, st := range []int{502, 504, 500, 503, 400, 403, 409} {
		up := hostile(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body); w.WriteHeader(st) })
		_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
		if unknown := st >= 500; errors.Is(err, engine.ErrFateUnknown) != unknown || err == nil {
			t.Errorf("upstream %d to an insert: %v, fate unknown %v", st, err, unknown)
		}
	}
}

// TestInsert200BadBodyFateUnknown: a 200 to an insert that is not
// {"RowsAffected": n} says the upstream ran it, not how: its fate is
// unknown.
func TestInsert200BadBodyFateUnknown(t *testing.T) {
	up := hostile(t, answerWith(`{"Affected":1}`))
	_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
	if !errors.Is(err, engine.ErrFateUnknown) {
		t.Errorf("200 with an unexpected body to an insert: %v, not ErrFateUnknown", err)
	}
}

// TestInsertTLSFailureNotSent: a TLS handshake refused sends nothing: the
// insert was not applied (it was called "may have been applied" when any
// error but a refused dial was).
func TestInsertTLSFailureNotSent(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("received") }))
	defer up.Close()
	_, err := fwd(t, up.URL, nil, time.Second).Forward(context.Background(), insert())
	if errors.Is(err, engine.ErrFateUnknown) {
		t.Errorf("certificate refused before anything was sent: %v", err)
	}
}

// TestInsertDialRefusedNotSent: a refused connection sends nothing: the
// insert was not applied, and the upstream is unavailable.
func TestInsertDialRefusedNotSent(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := fwd(t, "http://"+addr, nil, time.Second).Forward(context.Background(), insert())
	if errors.Is(err, engine.ErrFateUnknown) || !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("dial refused: %v", err)
	}
}

// TestClientGoneCancelsUpstream: a caller who goes away cancels
// the upstream request at once (not after the 30 s time limit).
// (It held when written.)
func TestClientGoneCancelsUpstream(t *testing.T) {
	cancelled := make(chan time.Duration, 1)
	started := make(chan time.Time, 1)
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // net/http watches for the peer going away once the body is read
		s := time.Now()
		started <- s
		select {
		case <-r.Context().Done():
			cancelled <- time.Since(s)
		case <-time.After(10 * time.Second):
		}
	})
	srv := serviceOver(t, up, func(c *iqengine.Config) { c.Timeout = 30 * time.Second }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/query", strings.NewReader("select Code from Security"))
	req.Header.Set("Authorization", "Bearer t")
	req.Header.Set("Content-Type", iqlType)
	go func() { <-started; time.Sleep(100 * time.Millisecond); cancel() }()
	_, _ = http.DefaultClient.Do(req)
	select {
	case d := <-cancelled:
		if d > 2*time.Second {
			t.Fatalf("upstream request cancelled after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived its caller")
	}
}

// TestRedirectKeepsToken: a redirect is not followed, so the
// caller's token never reaches the host it points to; error bodies of the
// upstream are never echoed.
// (It held when written.)
func TestRedirectKeepsToken(t *testing.T) {
	var stolen atomic.Value
	evil := hostile(t, func(w http.ResponseWriter, r *http.Request) { stolen.Store(r.Header.Get("Authorization")) })
	for _, code := range []int{301, 302, 303, 307, 308} {
		up := hostile(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, evil.URL+"/steal", code) })
		srv := serviceOver(t, up, nil, nil)
		status, body := post(t, srv, "/query", iqlType, "select Code from Security")
		if status != 502 || stolen.Load() != nil || strings.Contains(body, evil.URL) {
			t.Fatalf("%d: %d %s, evil host got %v", code, status, body, stolen.Load())
		}
	}
	for _, st := range []int{400, 401, 403, 404, 409, 418, 429, 500, 501} {
		up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(st)
			_, _ = io.WriteString(w, `<script>alert(1)</script>{"Error":{"Code":"<b>x</b>","Message":"db password hunter2"}}`)
		})
		srv := serviceOver(t, up, nil, nil)
		status, body := post(t, srv, "/query", iqlType, "select Code from Security")
		if status >= 500 && status != 502 || strings.Contains(body, "script") || strings.Contains(body, "hunter2") || strings.Contains(body, "<b>") {
			t.Fatalf("upstream %d: %d %s", st, status, body)
		}
	}
}

// TestRequestIdAndBurst: a Request-Id that is not 1-128 visible
// ASCII characters is refused before anything is forwarded; a burst from
// one user never has more than max_concurrent_per_user requests upstream.
// (It held when written.)
func TestRequestIdAndBurst(t *testing.T) {
	var inflight, peak, calls atomic.Int32
	release := make(chan struct{})
	up := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		inflight.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[]}`)
	})
	srv := serviceOver(t, up, func(c *iqengine.Config) { c.Timeout = 5 * time.Second }, nil)
	for _, rid := range []string{"a b", strings.Repeat("a", 129), "é", "a\tb"} {
		req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader("select Code from Security"))
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", iqlType)
		req.Header.Set("Request-Id", rid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("Request-Id %q: %d", rid, resp.StatusCode)
		}
	}
	if calls.Load() != 0 {
		t.Fatal("a bad Request-Id was forwarded")
	}
	var wg sync.WaitGroup
	var tooMany atomic.Int32
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader("select Code from Security"))
			req.Header.Set("Authorization", "Bearer same-user")
			req.Header.Set("Content-Type", iqlType)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				if resp.StatusCode == 429 {
					tooMany.Add(1)
				}
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	close(release)
	wg.Wait()
	if peak.Load() > int32(queryproxy.DefaultMaxConcurrentPerUser) || tooMany.Load() < 40-int32(queryproxy.DefaultMaxConcurrentPerUser) {
		t.Fatalf("peak %d upstream, %d refused", peak.Load(), tooMany.Load())
	}
}
