// Command tokenbench measures Gatehouse's token endpoint against the raw
// cost of the signature every access token needs. It starts the
// gatehouse app in-process through real Caddy (caddy.Load, admin off, a
// temporary data directory), then measures, each for -d with -c concurrent
// workers:
//
//   - the raw RS256 sign and verify rates with a 2048-bit key, and the
//     raw ES256 (P-256, low S) and EdDSA (Ed25519) sign rates;
//   - a plain Caddy static_response to the same POST (HTTP overhead);
//   - POST /connect/token with client_credentials (client_secret_basic),
//     for a client with RS256 access tokens, one with ES256 and one with
//     EdDSA;
//   - POST /connect/token with refresh_token, each worker rotating its own
//     chain after one password login.
//
// It prints one table; bench/README.md explains the figures. It exits
// non-zero if any request failed. Run it on demand, not in CI:
//
//	go run ./bench/tokenbench -d 10s -c 8 [-cpuprofile token.prof] [-rounds 5]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

func main() {
	d := flag.Duration("d", 10*time.Second, "how long each figure is measured")
	c := flag.Int("c", 8, "concurrent workers (signers or HTTP clients)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the token-endpoint phases (client_credentials and refresh) to this `file`")
	rounds := flag.Int("rounds", 0, "after the table, this many rounds of raw RS256 sign, client_credentials and refresh_token back to back, for the per-CPU ratios' paired 95% intervals (3 or more)")
	flag.Parse()
	if *d <= 0 || *c <= 0 || *rounds < 0 {
		fmt.Fprintln(os.Stderr, "tokenbench: -d and -c must be positive, -rounds not negative")
		os.Exit(2)
	}
	if err := run(*d, *c, *rounds, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "tokenbench:", err)
		os.Exit(1)
	}
}

// run measures every figure, prints the table, and fails if any request
// failed.
func run(d time.Duration, c, rounds int, cpuprofile string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tokenbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The raw signing rate is measured in two halves, before and after the
	// HTTP phases, so that a change in what else the machine runs shows as
	// a drift between them.
	before, err := measure(ctx, rowSign, c, d/2, rawSign)
	if err != nil {
		return err
	}
	verify, err := measure(ctx, "raw RS256 verify", c, d, rawVerify)
	if err != nil {
		return err
	}
	signES, err := measure(ctx, rowSignES256, c, d, rawSignES256)
	if err != nil {
		return err
	}
	signEd, err := measure(ctx, rowSignEdDSA, c, d, rawSignEdDSA)
	if err != nil {
		return err
	}

	srv, err := startServer(dir)
	if err != nil {
		return err
	}
	defer srv.stop()
	t := newTarget(srv.base, c)
	base, err := measure(ctx, rowBaseline, c, d, baseline(t, srv))
	if err != nil {
		return err
	}
	// The endpoint phases: logins and warm-ups first, so that the profile
	// holds only the measured requests.
	cc, err := prepare(ctx, rowCC, c, clientCredentials(t, srv, serviceID))
	if err != nil {
		return err
	}
	ccES, err := prepare(ctx, rowCCES256, c, clientCredentials(t, srv, es256ID))
	if err != nil {
		return err
	}
	ccEd, err := prepare(ctx, rowCCEdDSA, c, clientCredentials(t, srv, eddsaID))
	if err != nil {
		return err
	}
	rt, err := prepare(ctx, "refresh_token", c, refresh(t, srv))
	if err != nil {
		return err
	}
	stopProfile, err := startProfile(cpuprofile)
	if err != nil {
		return err
	}
	ccPhase, ccESPhase, ccEdPhase, rtPhase := cc.run(ctx, d), ccES.run(ctx, d), ccEd.run(ctx, d), rt.run(ctx, d)
	if err := stopProfile(); err != nil {
		return err
	}
	after, err := measure(ctx, rowSign, c, d-d/2, rawSign)
	if err != nil {
		return err
	}

	rows := []phase{merge(before, after), verify, signES, signEd, base, ccPhase, ccESPhase, ccEdPhase, rtPhase}
	printTable(os.Stdout, rows, [2]phase{before, after}, c, d)
	if err := checkErrors(rows, srv.logPath); err != nil {
		return err
	}
	if rounds > 0 {
		fmt.Println()
		return refreshRounds(ctx, os.Stdout, rounds, c, d, cc, rt)
	}
	return nil
}

// startProfile starts a CPU profile into path, if set; the returned
// function stops it and closes the file.
func startProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
