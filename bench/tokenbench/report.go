package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// goalRatio is the share of the raw signing rate the token endpoint should
// reach.
const goalRatio = 0.70

// refreshCPUGoal is the share of the raw RS256 signing rate a refresh
// should reach per CPU: what a refresh costs besides its signature (a read,
// a rotation committed to disk, a larger answer) at most a third of the
// signature.
const refreshCPUGoal = 0.75

// Past these, the raw sign row says the machine was busy: a utilisation
// below busyUtil, or a drift between its halves beyond busyDrift.
const (
	busyUtil  = 0.90
	busyDrift = 0.10
)

// The goal of the ES256 client_credentials row: at least esGoalRate
// grants a second, and at least esGoalBaseline of the static_response
// row's rate in the same run.
const (
	esGoalRate     = 5000
	esGoalBaseline = 0.50
)

// Names of the rows the table relates to each other.
const (
	rowSign      = "raw RS256 sign"
	rowSignES256 = "raw ES256 sign"
	rowSignEdDSA = "raw EdDSA sign"
	rowBaseline  = "caddy static_response"
	rowCC        = "client_credentials"
	rowCCES256   = "client_credentials ES256"
	rowCCEdDSA   = "client_credentials EdDSA"
	rowRefresh   = "refresh_token"
)

// endpointRows are the token-endpoint rows, whose net CPU is shown.
var endpointRows = []string{rowCC, rowCCES256, rowCCEdDSA, rowRefresh}

// goalRows are the rows held to goalRatio of the raw RS256 sign rate.
var goalRows = []string{rowCC, rowRefresh}

// signRowOf is the raw sign row a row compares with: its algorithm's.
func signRowOf(name string) string {
	switch name {
	case rowCCES256:
		return rowSignES256
	case rowCCEdDSA:
		return rowSignEdDSA
	}
	return rowSign
}

// printTable prints every figure, its ratio to the raw signing rate, and
// the CPU accounting.
// halves are the two runs of the raw sign row, before and after the HTTP
// phases.
func printTable(w io.Writer, rows []phase, halves [2]phase, c int, d time.Duration) {
	byName := map[string]phase{}
	for _, p := range rows {
		byName[p.name] = p
	}
	base := byName[rowBaseline]
	fmt.Fprintf(w, "tokenbench  %s %s/%s  GOMAXPROCS=%d NumCPU=%d  C=%d  d=%v\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), c, d)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tops/s\tvs sign\tp50\tp99\terrors\tutil\tCPU/op\tsign/CPU\tnet CPU/op\tsign/net\t")
	for _, p := range rows {
		sign := byName[signRowOf(p.name)]
		net, signNet := "-", "-"
		if isEndpoint(p.name) && p.cpuPerOp() > 0 && base.cpuPerOp() > 0 {
			n := p.cpuPerOp() - base.cpuPerOp()
			net, signNet = ms(n), pct(float64(sign.cpuPerOp())/float64(n))
		}
		util, signCPU := "-", "-"
		if p.cpuPerOp() > 0 {
			util, signCPU = pct(p.util()), pct(float64(sign.cpuPerOp())/float64(p.cpuPerOp()))
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", p.name, p.rate(), pct(p.rate()/sign.rate()),
			ms(p.percentile(0.50)), ms(p.percentile(0.99)), p.errs, util, ms(p.cpuPerOp()), signCPU, net, signNet)
	}
	tw.Flush()
	sign := byName[rowSign]
	fmt.Fprintf(w, "\nraw sign before / after the HTTP phases: %.1f / %.1f ops/s (%+.1f%%)\n",
		halves[0].rate(), halves[1].rate(), 100*(halves[1].rate()/halves[0].rate()-1))
	if drift := halves[1].rate()/halves[0].rate() - 1; sign.cpuPerOp() > 0 && (sign.util() < busyUtil || math.Abs(drift) > busyDrift) {
		fmt.Fprintf(w, "WARNING: other processes took CPU (raw sign util %s, drift %+.1f%%): the wall figures\n"+
			"         are unreliable; compare the per-CPU ones, or rerun on an idle machine.\n", pct(sign.util()), 100*drift)
	}
	for _, name := range goalRows {
		p, ok := byName[name]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "goal %s >= %.0f%% of raw sign: wall %s", name, 100*goalRatio, verdict(p.rate()/sign.rate()))
		if p.cpuPerOp() > 0 {
			fmt.Fprintf(w, ", per CPU %s", verdict(float64(sign.cpuPerOp())/float64(p.cpuPerOp())))
		}
		fmt.Fprintln(w)
	}
	if p, ok := byName[rowRefresh]; ok && p.cpuPerOp() > 0 && sign.cpuPerOp() > 0 {
		r, ok := float64(sign.cpuPerOp())/float64(p.cpuPerOp()), "met"
		if r < refreshCPUGoal {
			ok = "NOT met"
		}
		fmt.Fprintf(w, "goal %s >= %.0f%% of raw sign per CPU: %s (%s)\n", rowRefresh, 100*refreshCPUGoal, pct(r), ok)
	}
	if p, ok := byName[rowCCES256]; ok && base.rate() > 0 {
		rateOK, baseOK := "met", "met"
		if p.rate() < esGoalRate {
			rateOK = "NOT met"
		}
		if p.rate()/base.rate() < esGoalBaseline {
			baseOK = "NOT met"
		}
		fmt.Fprintf(w, "goal %s >= %d/s: %.1f/s (%s); >= %.0f%% of %s: %s (%s)\n", rowCCES256, esGoalRate, p.rate(), rateOK,
			100*esGoalBaseline, rowBaseline, pct(p.rate()/base.rate()), baseOK)
	}
	for _, name := range endpointRows {
		if p, ok := byName[name]; ok && p.cpuPerOp() > 0 && base.cpuPerOp() > 0 {
			fmt.Fprintf(w, "net CPU per grant %s: %s\n", name, ms(p.cpuPerOp()-base.cpuPerOp()))
		}
	}
	fmt.Fprint(w, `
vs sign    ops/s divided by the raw sign rate of the row's algorithm (RS256
           unless the row names ES256 or EdDSA; wall clock; the load
           generator runs in this process and takes CPU from the server;
           the raw rate is the mean of the runs before and after).
util       process CPU / (elapsed x GOMAXPROCS): well under 100% means the
           phase waited (a lock, the disk) or other processes took the cores.
CPU/op     process CPU (user+system, server and load generator) per op.
sign/CPU   raw sign CPU/op (the row's algorithm) divided by CPU/op: the signature's share of it,
           and the ratio to the raw sign rate at equal CPU use ("per CPU").
net CPU/op CPU/op minus the static_response row's: the token endpoint's own
           cost beyond HTTP, Caddy and the load generator.
sign/net   raw sign CPU/op divided by net CPU/op: the ratio the endpoint
           would reach if HTTP and the load generator cost nothing.
`)
}

// verdict shows a ratio to the raw signing rate and whether it meets the
// goal.
func verdict(r float64) string {
	if r < goalRatio {
		return pct(r) + " (NOT met)"
	}
	return pct(r) + " (met)"
}

func isEndpoint(name string) bool {
	for _, n := range endpointRows {
		if n == name {
			return true
		}
	}
	return false
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}

func pct(r float64) string { return fmt.Sprintf("%.1f%%", 100*r) }

// checkErrors fails the run if any operation failed, naming the first
// failure of each figure and the start of Caddy's error log.
func checkErrors(rows []phase, logPath string) error {
	failed := 0
	for _, p := range rows {
		if p.errs == 0 {
			continue
		}
		failed += p.errs
		fmt.Fprintf(os.Stderr, "FAIL %s: %d of %d operations failed, %d workers stopped; first: %v\n",
			p.name, p.errs, p.errs+p.ops, p.stopped, p.firstErr)
	}
	if failed == 0 {
		return nil
	}
	if f, err := os.Open(logPath); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for i := 0; i < 5 && sc.Scan(); i++ {
			fmt.Fprintln(os.Stderr, "caddy log:", strings.TrimSpace(sc.Text()))
		}
	}
	return fmt.Errorf("%d operations failed", failed)
}
