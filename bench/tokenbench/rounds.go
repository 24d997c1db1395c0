package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/bench/internal/paired"
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
	if mean, lo, hi, ok := paired.Interval(rtRatios); ok {
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
	if mean, lo, hi, ok := paired.Interval(ratios); ok {
		s += fmt.Sprintf("; geometric mean %.1f%% (95%%: %.1f%% to %.1f%%)", 100*mean, 100*lo, 100*hi)
	}
	return s
}
