//go:build linux

package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/bench/internal/auditlog"

	"github.com/gatehouse/gatehouse/bench/internal/paired"
)

// startAuditGateway starts the audit path (-audit): a gateway like the
// main one (compression off) with the audit on, its chain in auditLog
// under dir, in front of the same backend, with a token of its own issuer.
func startAuditGateway(dir string, bins binaries, be *backend) (p *path, auditLog string, err error) {
	const name = "gatehouse-audit"
	auditLog = filepath.Join(dir, name, "audit.log")
	ga, err := startGateway(dir, name, bins, be, false, auditLog)
	if err != nil {
		return nil, "", err
	}
	tok, err := ga.token()
	if err != nil {
		ga.stop()
		return nil, "", err
	}
	return &path{name: pathAudit, url: wsURL(ga.port, wsPath), header: http.Header{"Authorization": {"Bearer " + tok}},
		proxy: ga, backend: be}, auditLog, nil
}

// besideGateway puts the audit path a, if any, right next to the gateway
// in a round's order: before it in odd rounds, after it in even ones. The
// round's pair then meets the same machine, and neither always goes first.
func besideGateway(ps []*path, a *path, round int) []*path {
	if a == nil {
		return ps
	}
	i := slices.IndexFunc(ps, func(p *path) bool { return p.name == pathGatehouse })
	if round%2 == 0 {
		i++
	}
	return slices.Insert(ps, i, a)
}

// printAudit prints, for each figure, the gateway with its audit on next
// to the same gateway without it: the max rate and the CPU per message
// at the figure's offered rate, with their paired ratios round by round;
// then what the audit's log holds, to show the audit was on.
func printAudit(w io.Writer, r *results) {
	if r.auditLog == "" {
		return
	}
	fmt.Fprintln(w, "\naudit on vs off: gatehouse+audit is the same gateway with an audit block, its chain in a file")
	rows := [][]string{{"", pathGatehouse, pathAudit, "on/off"}}
	var lines []string
	for _, fr := range r.through {
		off, on := fr.max[pathGatehouse], fr.max[pathAudit]
		foff, fon := leastCPU(fr.fixed[pathGatehouse]), leastCPU(fr.fixed[pathAudit])
		add := func(label string, a, b float64, format func(float64) string) {
			rows = append(rows, []string{label, format(a), format(b), ratio(b, a)})
		}
		rows = append(rows, []string{fr.f.String()})
		add("  max rate (msg/s)", bestRate(off), bestRate(on), count)
		add(fmt.Sprintf("  proxy CPU/msg at %s/s", count(fr.offered)), micros(foff.perMsg(foff.proxyCPU)), micros(fon.perMsg(fon.proxyCPU)), usf)
		lat := merged(fr.fixed)
		add("  latency p50", micros(lat[pathGatehouse].percentile(0.5)), micros(lat[pathAudit].percentile(0.5)), usf)
		add("  latency p99", micros(lat[pathGatehouse].percentile(0.99)), micros(lat[pathAudit].percentile(0.99)), usf)
		lines = append(lines, pairedLine(fmt.Sprintf("%v, max rate", fr.f), pairedRatios(on, off)))
		lines = append(lines, pairedLine(fmt.Sprintf("%v, proxy CPU/msg", fr.f), pairedCPU(fr.fixed[pathAudit], fr.fixed[pathGatehouse])))
		if s := fon; s.rate() < sustained*fr.offered {
			lines = append(lines, fmt.Sprintf("  NOTE: %s delivered %s of the %s msg/s offered: its CPU figure is not at a sustained rate",
				pathAudit, count(s.rate()), count(fr.offered)))
		}
	}
	printRows(w, rows)
	fmt.Fprintln(w, "paired ratios on/off (the two run back to back in each round):")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "audit log %s: %s\n", filepath.Base(r.auditLog), auditlog.Kinds(r.auditLog))
}

// pairedLine is a figure's paired ratios round by round and, from three
// rounds, their geometric mean with its 95% confidence interval.
func pairedLine(label string, ratios []float64) string {
	cells := make([]string, len(ratios))
	for i, v := range ratios {
		cells[i] = fmt.Sprintf("%.3f", v)
	}
	line := fmt.Sprintf("  %s: %s", label, strings.Join(cells, " "))
	if mean, lo, hi, ok := paired.Interval(ratios); ok {
		line += fmt.Sprintf("; geometric mean %.3f, 95%% confidence interval %.3f to %.3f", mean, lo, hi)
	} else {
		line += " (an interval from three rounds: -rounds 3 or more)"
	}
	return line
}

// pairedCPU is on's proxy CPU per message over off's in each round, at
// the same offered rate.
func pairedCPU(on, off []sample) []float64 {
	var out []float64
	for i := range min(len(on), len(off)) {
		if b := off[i].perMsg(off[i].proxyCPU); b > 0 {
			out = append(out, float64(on[i].perMsg(on[i].proxyCPU))/float64(b))
		}
	}
	return out
}
