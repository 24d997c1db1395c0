package identity

// What a revocation costs when a client without a credential, or a
// low-privilege one, sends revocations in parallel bursts: memory, CPU and
// store rows whose cost grew with what the client sent. Each test failed
// before its fix, and its note says how.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

// TestRevocationCostFlat: a revocation at /connect/revocation costs the
// same with 0, 5,000 or 20,000 revocations in force: what a read brings
// is added to a small delta, not to a copy of every revocation in force.
// (It failed when each read that grew the set copied it whole: one
// revocation cost O(N), N revocations O(N^2), and any client may revoke
// its own tokens. With that copy put back, a revocation allocates 874 KiB
// with 20,000 in force against 20 KiB with none: the sizes, once 20,000
// and 80,000, are as small as catches it, since filling the store is what
// the test's time goes to.)
func TestRevocationCostFlat(t *testing.T) {
	f := newFixture(t)
	svc := basic("svc", "svc-secret")
	ctx := context.Background()
	revokeOne := func() (uint64, time.Duration) {
		tok := f.post(form("grant_type", oauth.GrantClientCredentials), svc).str("access_token")
		if tok == "" {
			t.Fatal("no access token")
		}
		var res response
		alloc, d := allocDuring(func() { res = f.revoke(form("token", tok), svc) })
		if res.status != http.StatusOK {
			t.Fatalf("revocation: %d %s", res.status, res.raw)
		}
		if r := f.userinfo("GET", tok); r.status != http.StatusUnauthorized {
			t.Fatalf("revoked token still accepted: %d", r.status)
		}
		return alloc, d
	}
	// What the attacker's earlier revocations left in force: rows as the
	// revocation endpoint writes them, for tokens that expire in an hour.
	var next atomic.Int64
	grow := func(to int) {
		n := int(next.Load())
		parallel(to-n, 32, func(int) {
			jti := fmt.Sprintf("attacker-jti-%09d", next.Add(1))
			now := f.clock.Now()
			if err := f.st.RevokeAccessToken(ctx, jti, now.Add(time.Hour), now); err != nil {
				t.Error(err)
			}
		})
		// Past the incremental read's overlap, so that the measured
		// revocation reads only itself, as it would a minute later.
		f.clock.Add(2 * time.Minute)
		if err := f.srv.verifier.RefreshRevocations(ctx); err != nil {
			t.Fatal(err)
		}
	}
	type point struct {
		n     int
		alloc uint64
		d     time.Duration
	}
	var pts []point
	for _, n := range []int{0, 5_000, 20_000} {
		if n > 0 {
			grow(n)
		}
		// The least of three: a poll of the verifier's own, running
		// meanwhile, would count in one.
		a, d := uint64(math.MaxUint64), time.Duration(math.MaxInt64)
		for range 3 {
			ai, di := revokeOne()
			a, d = min(a, ai), min(d, di)
		}
		pts = append(pts, point{n, a, d})
		t.Logf("%6d revocations in force: one revocation request allocates %7d KiB, takes %v", n, a>>10, d)
	}
	first, last := pts[0], pts[len(pts)-1]
	if last.alloc > 8*first.alloc {
		t.Errorf("a revocation allocates %d KiB with %d revocations in force, %d KiB with none: its cost grows with the revocations in force",
			last.alloc>>10, last.n, first.alloc>>10)
	}
}

// TestRevocationReadsTheLastSeconds: the read after a revocation made
// here (RevokedHere) reads back a few seconds from the last read, not the
// poll's minute (RevocationOverlap): with 5,000 revocations in the last
// minute, read by the poll, one revocation request costs what it costs
// with none. (It failed when each revocation re-read the whole minute: a
// client revoking at R per second made each revocation read 60 R rows,
// 20 MiB with 20,000 in the last minute, 4.3 MiB with these 5,000.)
func TestRevocationReadsTheLastSeconds(t *testing.T) {
	f := newFixture(t)
	svc := basic("svc", "svc-secret")
	ctx := context.Background()
	// measure is the least of three revocations: a poll of the
	// verifier's own, running meanwhile, would count in one.
	measure := func() (uint64, time.Duration) {
		a, d := uint64(math.MaxUint64), time.Duration(math.MaxInt64)
		for range 3 {
			tok := f.post(form("grant_type", oauth.GrantClientCredentials), svc).str("access_token")
			var res response
			ai, di := allocDuring(func() { res = f.revoke(form("token", tok), svc) })
			if res.status != http.StatusOK {
				t.Fatalf("revocation: %d %s", res.status, res.raw)
			}
			a, d = min(a, ai), min(d, di)
		}
		return a, d
	}
	a0, d0 := measure()
	// 5,000 revocations within the last minute (the attacker at ~83/s),
	// all already applied to the set.
	const recent = 5_000
	parallel(recent, 32, func(i int) {
		now := f.clock.Now()
		if err := f.st.RevokeAccessToken(ctx, fmt.Sprintf("recent-jti-%09d", i), now.Add(time.Hour), now); err != nil {
			t.Error(err)
		}
	})
	if err := f.srv.verifier.RefreshRevocations(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(30 * time.Second)                                  // still within the poll's overlap
	if err := f.srv.verifier.RefreshRevocations(ctx); err != nil { // the poll
		t.Fatal(err)
	}
	a1, d1 := measure()
	t.Logf("one revocation request: %d KiB, %v with none recent; %d KiB, %v with %d in the last minute",
		a0>>10, d0, a1>>10, d1, recent)
	if a1 > 8*a0 {
		t.Errorf("a revocation re-reads the last minute's %d revocations: %d KiB allocated, against %d KiB", recent, a1>>10, a0>>10)
	}
}

// TestRevocationBurstCostFlat: end to end, on the real clock, one
// client_credentials client (any low-privilege client that can get
// tokens; a public client refreshing does as well) mints tokens and
// revokes them, 16 at a time: the revocations that wait together share
// one read, and the 2,000th costs what the first did. (It failed when each
// revocation read the last minute and copied every revocation in force,
// one at a time under one mutex: each slower than the last, an honest
// logout's included. A lone revocation right after the burst still reads
// the burst's last seconds: a cost bounded by the rate, not the count.)
func TestRevocationBurstCostFlat(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Now = time.Now })
	svc := basic("svc", "svc-secret")
	const total, batch = 2_500, 500
	lone := func() time.Duration { // one revocation with nothing else running
		tok := f.serve(clientCredentialsRequest(svc)).str("access_token")
		_, d := allocDuring(func() {
			if res := f.revoke(form("token", tok), svc); res.status != http.StatusOK {
				t.Fatalf("revocation: %d %s", res.status, res.raw)
			}
		})
		return d
	}
	before := lone()
	var meanFirst, meanLast time.Duration
	for b := 0; b < total/batch; b++ {
		var mu sync.Mutex
		var sum, worst time.Duration
		parallel(batch, 16, func(int) {
			tok := f.serve(clientCredentialsRequest(svc)).str("access_token")
			req := httptest.NewRequest(http.MethodPost, testIssuer+PathRevocation, strings.NewReader(form("token", tok).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			svc(req)
			start := time.Now()
			res := f.serve(req)
			d := time.Since(start)
			if res.status != http.StatusOK {
				t.Errorf("revocation: %d %s", res.status, res.raw)
			}
			mu.Lock()
			sum, worst = sum+d, max(worst, d)
			mu.Unlock()
		})
		t.Logf("revocations %4d-%4d: mean %v, slowest %v", b*batch+1, (b+1)*batch, sum/batch, worst)
		if b == 0 {
			meanFirst = sum / batch
		}
		meanLast = sum / batch
	}
	after := lone()
	t.Logf("a lone revocation: %v before the burst, %v right after it", before, after)
	if meanLast > 3*meanFirst {
		t.Errorf("the mean revocation took %v after %d revocations, %v at first: each revocation pays for those before it",
			meanLast, total-batch, meanFirst)
	}
}

func clientCredentialsRequest(auth func(*http.Request)) *http.Request {
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(form("grant_type", oauth.GrantClientCredentials).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	auth(req)
	return req
}
