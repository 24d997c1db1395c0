// Command verifybench measures the access-token check: a cache hit and a
// cold verification, next to a raw RS256 signature check measured in the
// same run (the floor a cold verification cannot beat).
//
//	go run ./bench/verifybench [-benchtime 2s]
//
// Goals: a cache hit under 2 µs; a cold verify
// within 1.3x of the raw check.
package main

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

func main() {
	benchtime := flag.Duration("benchtime", 2*time.Second, "how long each measurement runs")
	flag.Parse()
	testing.Init()
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tb := &testing.B{}
	now := time.Now()
	issuer := verifytest.NewIssuer(tb, "https://issuer.bench", func() time.Time { return now })
	// A realistic token: what the identity server issues for demo/demo.
	claims := issuer.Claims("5d1c6f2e-8a4b-4c1e-9f3a-2b7d8e6c4a10",
		"openid", "profile", "email", "offline_access", "Service/Market", "Service/News")
	claims["name"], claims["preferred_username"], claims["email"] = "Demo User", "demo", "demo@example.com"
	claims["auth_time"] = now.Unix()
	token := verifytest.Sign(issuer.Header(), claims, issuer.Private)

	ctx := context.Background()
	newVerifier := func(cacheSize int) *verify.Verifier {
		v, err := verify.New(ctx, verify.Config{Issuer: issuer.URL, Keys: issuer, CacheSize: cacheSize,
			Now: func() time.Time { return now }})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return v
	}
	cold, cached := newVerifier(-1), newVerifier(0)
	if _, err := cached.Verify(ctx, token); err != nil {
		fmt.Fprintln(os.Stderr, "token does not verify:", err)
		os.Exit(1)
	}

	signingInput := token[:strings.LastIndexByte(token, '.')]
	sig, _ := base64.RawURLEncoding.DecodeString(token[strings.LastIndexByte(token, '.')+1:])
	pub := &issuer.Private.PublicKey
	raw := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			sum := sha256.Sum256([]byte(signingInput))
			if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
				b.Fatal(err)
			}
		}
	})
	run := func(v *verify.Verifier) testing.BenchmarkResult {
		return testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	coldRes, hitRes := run(cold), run(cached)
	parallelHit := testing.Benchmark(func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cached.Verify(ctx, token); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})

	fmt.Printf("verifier benchmark: %s, GOMAXPROCS=%d, token %d bytes, benchtime %v\n",
		runtime.Version(), runtime.GOMAXPROCS(0), len(token), *benchtime)
	fmt.Printf("%-34s %12s %10s %10s\n", "measurement", "ns/op", "allocs/op", "vs raw")
	row := func(name string, r testing.BenchmarkResult) {
		fmt.Printf("%-34s %12d %10d %9.2fx\n", name, r.NsPerOp(), r.AllocsPerOp(), float64(r.NsPerOp())/float64(raw.NsPerOp()))
	}
	row("raw RS256 check (baseline)", raw)
	row("cold verify (no cache)", coldRes)
	row("cache hit", hitRes)
	row("cache hit, parallel (all cores)", parallelHit)
	fmt.Printf("\ngoals: cache hit < 2000 ns: %v; cold verify <= 1.3x raw: %v (%.2fx)\n",
		hitRes.NsPerOp() < 2000, float64(coldRes.NsPerOp()) <= 1.3*float64(raw.NsPerOp()),
		float64(coldRes.NsPerOp())/float64(raw.NsPerOp()))
}
