package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// refreshRounds measures, rounds times, the raw RS256 sign rate, the
// client_credentials grant and the refresh grant back to back (their order
// turned round each round, so a drift of the machine falls on both sides),
// and prints each grant's per-CPU ratio to signing round by round with the
// geometric mean and its paired 95% interval. The refresh goal is met when
// the interval includes refreshCPUGoal or lies above it: a ratio that sits
// within the noise of one run is judged by the interval over rounds.
func refreshRounds(ctx context.Context, w io.Writer, rounds, c int, d time.Duration, cc, rt workers) error {
	var ccRatios, rtRatios []float64
	for i := range rounds {
		steps := []string{rowSign, rowCC, rowRefresh}
		if i%2 == 1 {
			steps = []string{rowRefresh, rowCC, rowSign}
		}
		got := map[string]phase{}
		for _, s := range steps {
			var p phase
			var err error
			switch s {
			case rowSign:
				p, err = measure(ctx, rowSign, c, d, rawSign)
			case rowCC:
				p = cc.run(ctx, d)
			case rowRefresh:
				p = rt.run(ctx, d)
			}
			if err != nil {
				return err
			}
			if p.errs > 0 || p.ops == 0 {
				return fmt.Errorf("round %d, %s: %d errors, %d operations (first: %v)", i+1, s, p.errs, p.ops, p.firstErr)
			}
			got[s] = p
		}
		sign := got[rowSign].cpuPerOp().Seconds()
		ccRatios = append(ccRatios, sign/got[rowCC].cpuPerOp().Seconds())
		rtRatios = append(rtRatios, sign/got[rowRefresh].cpuPerOp().Seconds())
		fmt.Fprintf(w, "round %d: raw sign %.0f/s (util %.1f%%)  client_credentials %.1f%%  refresh_token %.1f%% of raw sign per CPU\n",
			i+1, got[rowSign].rate(), 100*got[rowSign].util(), 100*ccRatios[i], 100*rtRatios[i])
	}
	fmt.Fprintf(w, "\nper CPU over %d rounds of %v each (paired with the round's raw sign):\n", rounds, d)
	fmt.Fprintf(w, "  client_credentials: %s\n", roundsText(ccRatios))
	fmt.Fprintf(w, "  refresh_token:      %s\n", roundsText(rtRatios))
	if mean, lo, hi, ok := pairedInterval(rtRatios); ok {
		verdict := "NOT met"
		switch {
		case lo >= refreshCPUGoal:
			verdict = "met: the interval lies above it"
		case hi >= refreshCPUGoal:
			verdict = "met within the noise: the interval includes it"
		}
		fmt.Fprintf(w, "goal refresh_token >= %.0f%% of raw sign per CPU over rounds: mean %.1f%% (95%%: %.1f%% to %.1f%%), %s\n",
			100*refreshCPUGoal, 100*mean, 100*lo, 100*hi, verdict)
	}
	return nil
}

// roundsText is the ratios as percentages and, from three rounds, their
// geometric mean with its 95% interval.
func roundsText(ratios []float64) string {
	cells := make([]string, len(ratios))
	for i, r := range ratios {
		cells[i] = fmt.Sprintf("%.1f%%", 100*r)
	}
	s := strings.Join(cells, " ")
	if mean, lo, hi, ok := pairedInterval(ratios); ok {
		s += fmt.Sprintf("; geometric mean %.1f%% (95%%: %.1f%% to %.1f%%)", 100*mean, 100*lo, 100*hi)
	}
	return s
}

// pairedInterval is the geometric mean of paired ratios and its 95%
// confidence interval (Student's t over their logarithms); ok needs three
// ratios or more.
func pairedInterval(ratios []float64) (mean, lo, hi float64, ok bool) {
	n := len(ratios)
	if n < 3 {
		return 0, 0, 0, false
	}
	var sum, sq float64
	for _, r := range ratios {
		sum += math.Log(r)
	}
	m := sum / float64(n)
	for _, r := range ratios {
		d := math.Log(r) - m
		sq += d * d
	}
	half := tQuantile975(n-1) * math.Sqrt(sq/float64(n-1)/float64(n))
	return math.Exp(m), math.Exp(m - half), math.Exp(m + half), true
}

// tQuantile975 is the 97.5th percentile of Student's t distribution with
// df degrees of freedom, from the usual table; the normal's past 30.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df < len(table) {
		return table[df]
	}
	return 1.960
}
