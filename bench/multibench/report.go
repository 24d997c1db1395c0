//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// tokenRow is one throughput figure.
type tokenRow struct {
	store     store
	instances int
	grant     grant
	figure    figure
}

// revocationRow is one latency figure.
type revocationRow struct {
	store     store
	instances int
	latencies []time.Duration
}

// printTokens prints the throughput table and the ratios under it, and
// fails if any request failed.
func printTokens(o options, rows []tokenRow) error {
	fmt.Printf("token endpoint: %d workers, %v per row, requests round robin over the instances\n", o.c, o.d)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tinstances\tgrant\tops/s\tp50\tp99\terrors\t")
	var failed []error
	rate := map[string]float64{}
	for _, r := range rows {
		f := r.figure
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%s\t%s\t%d\t\n", r.store, r.instances, r.grant, f.rate(), ms(f.p50), ms(f.p99), f.errors)
		rate[fmt.Sprintf("%s/%d/%s", r.store, r.instances, r.grant)] = f.rate()
		if f.first != nil {
			failed = append(failed, fmt.Errorf("%s, %d instances, %s: %d errors, the first: %w", r.store, r.instances, r.grant, f.errors, f.first))
		}
	}
	tw.Flush()
	ratio := func(a, b string) string {
		if rate[b] == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", rate[a]/rate[b])
	}
	fmt.Printf("refresh_token: postgres/sqlite %s (one instance each); two instances/one %s (postgres)\n",
		ratio("postgres/1/refresh_token", "sqlite/1/refresh_token"), ratio("postgres/2/refresh_token", "postgres/1/refresh_token"))
	fmt.Printf("client_credentials (no store): two instances/one %s\n\n",
		ratio("postgres/2/client_credentials", "postgres/1/client_credentials"))
	return errors.Join(failed...)
}

// printRevocations prints the latency table.
func printRevocations(o options, rows []revocationRow) {
	fmt.Printf("revocation on the first instance -> the end of a socket's authority (the Identify push), %d sessions per row,\n"+
		"revocations 0 to %v apart; from sending the revocation to receiving the push\n", o.sessions, 2*o.spacing)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tsocket on\tp50\tp99\tmax\t")
	for _, r := range rows {
		on := "the other instance"
		if r.instances == 1 {
			on = "the same instance"
		}
		l := slices.Clone(r.latencies)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", r.store, on, ms(percentile(l, 0.50)), ms(percentile(l, 0.99)), ms(slices.Max(l)))
	}
	tw.Flush()
}

// ms formats d in milliseconds, to 0.1 ms.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
