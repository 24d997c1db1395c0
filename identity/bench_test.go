package identity

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkTokenGrants measures the token endpoint's handler, without a
// network or a client, on the fixture's SQLite file (synchronous FULL):
// client_credentials against refresh_token, each with one RS256 signature
// (no openid scope, so no ID token). Each parallel goroutine rotates a
// refresh chain of its own, as bench/tokenbench's workers do. cpu-us/op is
// the process's CPU time per grant; the refresh row's excess over the
// client_credentials one is what a refresh costs besides its signature.
//
//	go test -run '^$' -bench TokenGrants -cpu 2 ./identity/
//	go test -run '^$' -bench TokenGrants/refresh -cpu 2 -cpuprofile refresh.prof ./identity/
func BenchmarkTokenGrants(b *testing.B) {
	b.Run("client_credentials", func(b *testing.B) {
		body := form("grant_type", "client_credentials", "scope", "Service/Market").Encode()
		benchmarkGrant(b, newFixture(b), func(f *fixture) (grantOp, error) {
			return func() response {
				req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth("svc", "svc-secret")
				return f.serve(req)
			}, nil
		})
	})
	b.Run("refresh_token", func(b *testing.B) {
		benchmarkGrant(b, newFixture(b), func(f *fixture) (grantOp, error) {
			login := form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw",
				"scope", "offline_access Service/Market").Encode()
			req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(login))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res := f.serve(req)
			rt := res.str("refresh_token")
			if rt == "" || res.str("id_token") != "" {
				return nil, fmt.Errorf("login: want a refresh token and no ID token: %d %s", res.status, res.raw)
			}
			return func() response {
				res := f.serve(refreshRequest("app", rt))
				rt = res.str("refresh_token")
				return res
			}, nil
		})
	})
}

// grantOp makes one grant request through the fixture's handler.
type grantOp func() response

// benchmarkGrant runs grants in parallel, each goroutine the op setup
// gave it before the clock started (a refresh chain starts with a login,
// whose password hash is not what is measured); a failed grant fails the
// benchmark.
func benchmarkGrant(b *testing.B, f *fixture, setup func(*fixture) (grantOp, error)) {
	const parallelism = 4
	b.SetParallelism(parallelism)
	ops := make([]grantOp, parallelism*runtime.GOMAXPROCS(0))
	for i := range ops {
		op, err := setup(f)
		if err != nil {
			b.Fatalf("setting up: %v", err)
		}
		ops[i] = op
	}
	var next atomic.Int64
	var failed atomic.Bool
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		op := ops[next.Add(1)-1]
		for pb.Next() {
			if res := op(); res.status != http.StatusOK || res.err != nil {
				if failed.CompareAndSwap(false, true) {
					b.Errorf("grant: %d %v %s", res.status, res.err, res.raw)
				}
				return
			}
		}
	})
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	}
}
