//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/bench/internal/marketblast"

	"github.com/gatehouse/gatehouse/bench/internal/paired"
)

// The compression figures: the gateway with permessage-deflate negotiated
// by the client (the path gatehouse+deflate, a route of the same gateway
// process with compression on, and a client that offers it, as every
// browser does) next to the same gateway with it off, round by round,
// back to back; backend->client, also the path gatehouse+passthrough, a
// route with backend_compression besides: the backend compresses every
// message (gorilla, the standard library's flate at level 1) and the
// gateway decompresses each to check it and passes it on compressed
// where that is shorter.

// Goals of the compression figures, on/off, at most.
const (
	goalZ256CPU    = 1.3  // backend->client 256 B, proxy CPU/msg
	goalZ256P50    = 1.5  // backend->client 256 B, latency p50
	goalZ8kCPU     = 2.0  // backend->client 8 KiB, proxy CPU/msg
	goalZAllBytes  = 1.05 // market data, client-leg bytes against every message compressed
	gatewayDeflate = 3    // the flate level the gateway compresses at (wsauth/internal/wsframe.DeflateLevel)
)

// compressResult is one figure with compression negotiated (on) and off:
// each one's max rate, then both at a rate both sustain, round by round.
type compressResult struct {
	f            figure
	offered      float64
	maxOn, maxOf []sample
	on, off      []sample
	// maxPass and pass are the passthrough path's, backend->client only.
	maxPass, pass []sample
	// allBytes, for the market data: the client-leg bytes per message
	// of each off round had every message been compressed alone at the
	// gateway's level (the off round's bytes, each message's frame swapped
	// for its compressed frame).
	allBytes []float64
}

// compressFigures are the figures measured with compression: the
// throughput figures -only names (all four when it names none; with
// -quick backend->client 256 B alone), then backend->client market data.
func compressFigures(o *options) []figure {
	var fs []figure
	for _, f := range figures {
		if o.only[figureSlug(f)] {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		fs = figures
	}
	if o.quick {
		fs = fs[:1]
	}
	return append(fs[:len(fs):len(fs)], figure{dir: backendToClient, market: true})
}

// compression measures the compression figures: gh is the gateway with
// compression off, z the same with it negotiated, zp with it negotiated
// on both legs (backend->client figures only).
func compression(ctx context.Context, gh, z, zp *path, o *options, r *results) error {
	msgs, sentAt := marketblast.Templates("Bench!0")
	for i, m := range msgs {
		// Stamped as the backend stamps them: a placeholder of zeros would
		// compress better than a time does.
		strconv.AppendInt(m[:sentAt], time.Now().UnixNano()+int64(i)*27_000, 10)
	}
	plain, all, err := marketblast.FrameBytes(msgs, gatewayDeflate)
	if err != nil {
		return err
	}
	for _, f := range compressFigures(o) {
		c := compressResult{f: f}
		ps := []*path{gh, z}
		if f.dir == backendToClient {
			ps = append(ps, zp)
		}
		pair := func(round int) []*path { // each path first in turn
			out := make([]*path, 0, len(ps))
			for i := range ps {
				out = append(out, ps[(i+round)%len(ps)])
			}
			return out
		}
		for round := range o.rounds {
			for _, p := range pair(round) {
				s, err := trial(ctx, p, f, 0, o.trialOptions, "")
				if err != nil {
					return fmt.Errorf("%v on %s, max rate: %w", f, p.name, err)
				}
				progress("%-22v max rate   %-17s %9.0f msg/s  %.0f B/msg", f, p.name, s.rate(), perMsgBytes(s))
				switch p {
				case z:
					c.maxOn = append(c.maxOn, s)
				case zp:
					c.maxPass = append(c.maxPass, s)
				default:
					c.maxOf = append(c.maxOf, s)
				}
			}
		}
		c.offered = twoDigits(o.load * min(bestRate(c.maxOn), bestRate(c.maxOf)))
		if len(c.maxPass) > 0 {
			c.offered = twoDigits(o.load * min(bestRate(c.maxOn), bestRate(c.maxOf), bestRate(c.maxPass)))
		}
		for round := range o.rounds {
			for _, p := range pair(round) {
				s, err := trial(ctx, p, f, c.offered, o.trialOptions, "")
				if err != nil {
					return fmt.Errorf("%v on %s at %.0f msg/s: %w", f, p.name, c.offered, err)
				}
				switch p {
				case z:
					c.on = append(c.on, s)
				case zp:
					c.pass = append(c.pass, s)
				default:
					c.off = append(c.off, s)
					if f.market {
						c.allBytes = append(c.allBytes, perMsgBytes(s)-plain+all)
					}
				}
				progress("%-22v at %.0f/s %-17s proxy %s/msg  p50 %s  %.0f B/msg", f, c.offered, p.name,
					us(s.perMsg(s.proxyCPU)), us(s.percentile(0.50)), perMsgBytes(s))
			}
		}
		r.compress = append(r.compress, c)
	}
	return nil
}

// perMsgBytes is the client-leg bytes per message of s.
func perMsgBytes(s sample) float64 { return float64(s.wire) / float64(max(s.msgs, 1)) }

// pairedBy is, round by round, v of a over v of b.
func pairedBy(a, b []sample, v func(sample) float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if d := v(b[i]); d > 0 {
			out = append(out, v(a[i])/d)
		}
	}
	return out
}

// compressRatios are a figure's on/off ratios, round by round, by name.
func compressRatios(c compressResult) []struct {
	name   string
	ratios []float64
} {
	cpu := func(s sample) float64 { return float64(s.perMsg(s.proxyCPU)) }
	p50 := func(s sample) float64 { return float64(s.percentile(0.5)) }
	out := []struct {
		name   string
		ratios []float64
	}{
		{"max rate on/off", pairedBy(c.maxOn, c.maxOf, sample.rate)},
		{fmt.Sprintf("proxy CPU/msg at %s/s on/off", count(c.offered)), pairedBy(c.on, c.off, cpu)},
		{"latency p50 on/off", pairedBy(c.on, c.off, p50)},
		{"client-leg bytes/msg on/off", pairedBy(c.on, c.off, perMsgBytes)},
	}
	if len(c.allBytes) > 0 {
		var r []float64
		for i := range min(len(c.on), len(c.allBytes)) {
			r = append(r, perMsgBytes(c.on[i])/c.allBytes[i])
		}
		out = append(out, struct {
			name   string
			ratios []float64
		}{"client-leg bytes/msg on/every message compressed", r})
	}
	if len(c.pass) > 0 {
		out = append(out, []struct {
			name   string
			ratios []float64
		}{
			{"passthrough: max rate/off", pairedBy(c.maxPass, c.maxOf, sample.rate)},
			{"passthrough: proxy CPU/msg/off", pairedBy(c.pass, c.off, cpu)},
			{"passthrough: proxy CPU/msg/on", pairedBy(c.pass, c.on, cpu)},
			{"passthrough: latency p50/off", pairedBy(c.pass, c.off, p50)},
			{"passthrough: client-leg bytes/msg/off", pairedBy(c.pass, c.off, perMsgBytes)},
		}...)
	}
	return out
}

func printCompression(w io.Writer, r *results) {
	if len(r.compress) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncompression negotiated by the client (permessage-deflate, the gateway's default) vs off, gatehouse only;")
	fmt.Fprintln(w, "on/off ratios round by round, their geometric mean and paired 95% interval (3 rounds or more)")
	for _, c := range r.compress {
		fmt.Fprintf(w, "  %v: max rate off %s on %s msg/s; at %s/s proxy CPU/msg off %s on %s, p50 off %s on %s, bytes/msg off %.0f on %.0f\n",
			c.f, count(bestRate(c.maxOf)), count(bestRate(c.maxOn)), count(c.offered),
			usf(micros(leastCPU(c.off).perMsg(leastCPU(c.off).proxyCPU))), usf(micros(leastCPU(c.on).perMsg(leastCPU(c.on).proxyCPU))),
			usf(micros(merged(map[string][]sample{"": c.off})[""].percentile(0.5))), usf(micros(merged(map[string][]sample{"": c.on})[""].percentile(0.5))),
			meanBy(c.off, perMsgBytes), meanBy(c.on, perMsgBytes))
		if len(c.pass) > 0 {
			fmt.Fprintf(w, "    passthrough (backend_compression, the backend compressing): max rate %s msg/s; at %s/s proxy CPU/msg %s, p50 %s, bytes/msg %.0f\n",
				count(bestRate(c.maxPass)), count(c.offered), usf(micros(leastCPU(c.pass).perMsg(leastCPU(c.pass).proxyCPU))),
				usf(micros(merged(map[string][]sample{"": c.pass})[""].percentile(0.5))), meanBy(c.pass, perMsgBytes))
		}
		for _, cr := range compressRatios(c) {
			fmt.Fprintf(w, "    %-52s %s\n", cr.name, intervalText(cr.ratios))
		}
		for _, s := range append(append(append([]sample{}, c.off...), c.on...), c.pass...) {
			if s.rate() < sustained*c.offered {
				fmt.Fprintf(w, "    NOTE: a round delivered %s of the %s msg/s offered\n", count(s.rate()), count(c.offered))
			}
		}
	}
}

// meanBy is the mean of v over ss.
func meanBy(ss []sample, v func(sample) float64) float64 {
	var sum float64
	for _, s := range ss {
		sum += v(s)
	}
	return sum / float64(max(len(ss), 1))
}

// intervalText is ratios, their geometric mean and interval.
func intervalText(ratios []float64) string {
	cells := make([]string, len(ratios))
	for i, v := range ratios {
		cells[i] = fmt.Sprintf("%.2f", v)
	}
	s := strings.Join(cells, " ")
	if mean, lo, hi, ok := paired.Interval(ratios); ok {
		s += fmt.Sprintf("  mean %.3f (95%%: %.3f to %.3f)", mean, lo, hi)
	}
	return s
}

// printCompressionGoals prints the compression goals: a ratio's goal is
// met when its geometric mean is within it, or within the noise when its
// interval reaches it.
func printCompressionGoals(w io.Writer, r *results) {
	for _, c := range r.compress {
		ratios := compressRatios(c)
		check := func(what string, i int, goal float64) {
			if i >= len(ratios) || len(ratios[i].ratios) == 0 {
				return
			}
			mean, lo, hi, ok := paired.Interval(ratios[i].ratios)
			if !ok {
				mean = median(ratios[i].ratios)
				lo, hi = mean, mean
			}
			verdict := "MISS"
			switch {
			case mean <= goal:
				verdict = "PASS"
			case lo <= goal:
				verdict = "PASS (within the noise)"
			}
			fmt.Fprintf(w, "  %s  %v, compression on/off: %s %.2fx (<= %.2f; 95%% interval %.2f to %.2f)\n",
				verdict, c.f, what, mean, goal, lo, hi)
		}
		switch {
		case c.f.market:
			check("client-leg bytes against every message compressed", 4, goalZAllBytes)
		case c.f == figures[0]:
			check("proxy CPU/msg", 1, goalZ256CPU)
			check("latency p50", 2, goalZ256P50)
		case c.f == figures[1]:
			check("proxy CPU/msg", 1, goalZ8kCPU)
		}
	}
}
