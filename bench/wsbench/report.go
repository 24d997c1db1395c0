//go:build linux

package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/bench/internal/paired"
)

// The goals the gateway is held to (bench/README.md, "Goals").
const (
	goalB2CCPU  = 1.10     // backend->client CPU/msg, gatehouse/reverse_proxy, at most
	goalB2CRate = 1.00     // backend->client max rate, gatehouse/reverse_proxy, at least
	goalC2BCPU  = 1.50     // client->backend CPU/msg, gatehouse/reverse_proxy, at most
	goalMemory  = 64 << 10 // bytes per idle connection, at most
)

// sustained is the share of the offered rate a path must deliver for its
// CPU and latency figures to count as sustained.
const sustained = 0.97

// report prints every figure, the goals and the notes.
func report(w io.Writer, r *results, o *options) {
	fmt.Fprintf(w, "\nwsbench  %s %s/%s  NumCPU=%d  conns=%d  window=%v  warm-up=%v  rounds=%d  (%v)\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.conns, o.d, o.warm, o.rounds,
		time.Since(r.startedAt).Round(time.Second))
	fmt.Fprintln(w, "gatehouse: gatehouse_ws, header auth, compression off, rate limit raised; reverse_proxy: the same binary,")
	fmt.Fprintln(w, "a site with only reverse_proxy; direct: the backend itself. Backend: bench/wsbench/backend, own process.")

	for _, fr := range r.through {
		printFigure(w, fr)
	}
	printAudit(w, r)
	if len(r.memory) > 0 {
		printMemory(w, r)
	}
	printCompression(w, r)
	printGoals(w, r)
	printCompressionGoals(w, r)
	if len(r.profiles) > 0 {
		fmt.Fprintln(w, "\nprofiles (CPU and allocations: gatehouse at the offered rates, in extra trials; heap: each proxy at N connections):")
		for _, p := range r.profiles {
			fmt.Fprintln(w, "  "+p)
		}
		fmt.Fprintln(w, "  go tool pprof -top <x>.pprof; go tool pprof -sample_index=alloc_space -top <x>.allocs.pprof;")
		fmt.Fprintln(w, "  go tool pprof -sample_index=inuse_space -top <x>.heap.pprof")
	}
}

func printFigure(w io.Writer, fr figureResult) {
	best := map[string]sample{}
	fixed := map[string]sample{}
	for _, name := range pathNames {
		best[name] = bestSample(fr.max[name])
		fixed[name] = leastCPU(fr.fixed[name])
	}
	rows := [][]string{{fr.f.String(), pathGatehouse, pathProxy, pathDirect, "gh/rp", "gh/direct"}}
	row := func(label string, v func(s sample) float64, format func(float64) string, from map[string]sample, ratios bool) {
		vals := make([]float64, len(pathNames))
		cells := []string{label}
		for i, name := range pathNames {
			vals[i] = v(from[name])
			cells = append(cells, format(vals[i]))
		}
		if ratios {
			cells = append(cells, ratio(vals[0], vals[1]), ratio(vals[0], vals[2]))
		}
		rows = append(rows, cells)
	}
	row("max rate (msg/s)", func(s sample) float64 { return s.rate() }, count, best, true)
	rows = append(rows, []string{fmt.Sprintf("at %s msg/s offered:", count(fr.offered))})
	row("  achieved (msg/s)", func(s sample) float64 { return s.rate() }, count, fixed, false)
	row("  proxy CPU/msg", func(s sample) float64 { return micros(s.perMsg(s.proxyCPU)) }, usf, fixed, true)
	row("  proxy+backend CPU/msg", func(s sample) float64 { return micros(s.perMsg(s.proxyCPU + s.backendCPU)) }, usf, fixed, true)
	row("  load generator CPU/msg", func(s sample) float64 { return micros(s.perMsg(s.loadCPU)) }, usf, fixed, false)
	row("  latency p50", func(s sample) float64 { return micros(s.percentile(0.50)) }, usf, merged(fr.fixed), true)
	row("  latency p99", func(s sample) float64 { return micros(s.percentile(0.99)) }, usf, merged(fr.fixed), true)
	fmt.Fprintln(w)
	printRows(w, rows)
	for _, name := range pathNames {
		switch s := fixed[name]; {
		case s.rate() < sustained*fr.offered:
			fmt.Fprintf(w, "  NOTE: %s delivered %s of the %s msg/s offered: its CPU and latency figures are not at a sustained rate\n",
				name, count(s.rate()), count(fr.offered))
		case s.rate() > fr.offered/sustained:
			fmt.Fprintf(w, "  NOTE: %s delivered %s msg/s, more than the %s offered: a backlog from the warm-up drained in the window\n",
				name, count(s.rate()), count(fr.offered))
		}
	}
}

func printMemory(w io.Writer, r *results) {
	gh := r.memory[pathGatehouse]
	fmt.Fprintf(w, "\nmemory per idle authenticated connection, N=%s", count(float64(gh.n)))
	if r.nNote != "" {
		fmt.Fprintf(w, " (%s)", r.nNote)
	}
	fmt.Fprintln(w)
	rows := [][]string{{"", pathGatehouse, pathProxy, pathDirect, "gh/rp", "gh/direct"}}
	row := func(label string, v func(m memSample) float64, ratios bool) {
		vals := make([]float64, len(pathNames))
		cells := []string{label}
		for i, name := range pathNames {
			vals[i] = v(r.memory[name])
			cells = append(cells, kibf(vals[i]))
		}
		if ratios {
			cells = append(cells, ratio(vals[0], vals[1]), ratio(vals[0], vals[2]))
		}
		rows = append(rows, cells)
	}
	row("proxy RSS/conn, peak (VmHWM)", func(m memSample) float64 { return m.proxy.perConn(m.proxy.peak, m.n) }, true)
	row("proxy RSS/conn, settled (VmRSS)", func(m memSample) float64 { return m.proxy.perConn(m.proxy.settled, m.n) }, true)
	row("proxy Go heap in use/conn", func(m memSample) float64 { return m.goPerConn().heap }, true)
	row("proxy Go heap live/conn (after a GC)", func(m memSample) float64 { return m.goPerConn().live }, true)
	row("proxy goroutine stacks/conn", func(m memSample) float64 { return m.goPerConn().stacks }, true)
	row("backend RSS/conn, peak", func(m memSample) float64 { return m.back.perConn(m.back.peak, m.n) }, false)
	row("proxy+backend RSS/conn, peak", func(m memSample) float64 {
		return m.proxy.perConn(m.proxy.peak, m.n) + m.back.perConn(m.back.peak, m.n)
	}, true)
	gor := []string{"proxy goroutines/conn"}
	idle := []string{"proxy idle RSS (MiB)"}
	open := []string{"connections open / time"}
	for _, name := range pathNames {
		m := r.memory[name]
		g := "-"
		if m.goOpen.goroutines > 0 {
			g = fmt.Sprintf("%.2f", m.goPerConn().goroutines)
		}
		gor = append(gor, g)
		idle = append(idle, mib(m.proxy.idle))
		open = append(open, fmt.Sprintf("%d / %v", m.n, m.open.Round(10*time.Millisecond)))
	}
	rows = append(rows, gor, idle, open)
	printRows(w, rows)
	for _, name := range pathNames {
		if m := r.memory[name]; m.err != nil || m.n < m.want {
			fmt.Fprintf(w, "  NOTE: %s: %d of %d connections: %v\n", name, m.n, m.want, m.err)
		}
	}
}

func printGoals(w io.Writer, r *results) {
	fmt.Fprintln(w, "\ngoals")
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	for _, fr := range r.through {
		gh, rp := leastCPU(fr.fixed[pathGatehouse]), leastCPU(fr.fixed[pathProxy])
		cpu := float64(gh.perMsg(gh.proxyCPU)) / float64(rp.perMsg(rp.proxyCPU))
		if fr.f.dir == backendToClient {
			fmt.Fprintf(w, "  %s  %v: CPU/msg within 10%% of reverse_proxy's: %.2fx (<= %.2f)\n",
				verdict(cpu <= goalB2CCPU), fr.f, cpu, goalB2CCPU)
			rate := bestRate(fr.max[pathGatehouse]) / bestRate(fr.max[pathProxy])
			fmt.Fprintf(w, "  %s  %v: max rate at least reverse_proxy's: %.2fx (>= %.2f)\n",
				verdict(rate >= goalB2CRate), fr.f, rate, goalB2CRate)
			if paired := pairedRatios(fr.max[pathGatehouse], fr.max[pathProxy]); len(paired) > 1 {
				cells := make([]string, len(paired))
				for i, v := range paired {
					cells[i] = fmt.Sprintf("%.2f", v)
				}
				fmt.Fprintf(w, "        round by round (the two paths run back to back): %s, median %.2f\n",
					strings.Join(cells, " "), median(paired))
			}
			if mean, lo, hi, ok := paired.Interval(pairedRatios(fr.max[pathGatehouse], fr.max[pathProxy])); ok {
				lower := "no: parity is within the interval"
				switch {
				case hi < 1:
					lower = "YES"
				case lo > 1:
					lower = "no: gatehouse is faster"
				}
				fmt.Fprintf(w, "        paired ratio, geometric mean %.3f, 95%% confidence interval %.3f to %.3f; lower than reverse_proxy's with 95%% confidence: %s\n",
					mean, lo, hi, lower)
			}
		} else {
			fmt.Fprintf(w, "  %s  %v: CPU/msg at most 1.5x reverse_proxy's: %.2fx (<= %.2f)\n",
				verdict(cpu <= goalC2BCPU), fr.f, cpu, goalC2BCPU)
		}
	}
	m, ok := r.memory[pathGatehouse]
	if !ok {
		return
	}
	per := m.proxy.perConn(m.proxy.peak, m.n)
	fmt.Fprintf(w, "  %s  memory per idle connection at most 64 KiB: %s (peak RSS, N=%d)\n",
		verdict(per <= goalMemory && m.n > 0), kibf(per), m.n)
}

// printRows prints rows as columns: the first left-aligned, the others
// right-aligned; a row of one cell is a heading.
func printRows(w io.Writer, rows [][]string) {
	var width []int
	for _, r := range rows {
		if len(r) == 1 {
			continue
		}
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		if len(r) == 1 {
			fmt.Fprintln(w, r[0])
			continue
		}
		var b strings.Builder
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", width[0], c)
				continue
			}
			fmt.Fprintf(&b, "  %*s", width[i]+1, c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// bestSample is the round with the highest rate; bestRate its rate.
func bestSample(ss []sample) sample {
	var best sample
	for _, s := range ss {
		if s.rate() > best.rate() || best.msgs == 0 {
			best = s
		}
	}
	return best
}

func bestRate(ss []sample) float64 { return bestSample(ss).rate() }

// leastCPU is the round whose proxy and backend used the least CPU per
// message: the one least disturbed by the rest of the machine.
func leastCPU(ss []sample) sample {
	var best sample
	for _, s := range ss {
		if best.msgs == 0 || s.perMsg(s.proxyCPU+s.backendCPU) < best.perMsg(best.proxyCPU+best.backendCPU) {
			best = s
		}
	}
	return best
}

// merged are, per path, the latencies of every round together.
func merged(byPath map[string][]sample) map[string]sample {
	out := map[string]sample{}
	for name, ss := range byPath {
		var m sample
		for _, s := range ss {
			m.lat = append(m.lat, s.lat...)
		}
		slices.Sort(m.lat)
		out[name] = m
	}
	return out
}

// twoDigits rounds v down to two significant digits (37412 -> 37000).
func twoDigits(v float64) float64 {
	if v < 10 {
		return max(1, math.Floor(v))
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-1)
	return math.Floor(v/p) * p
}

// figureSlug names f in -only and in profile names: b2c-256, c2b-8k.
func figureSlug(f figure) string {
	d := "b2c"
	if f.dir == clientToBackend {
		d = "c2b"
	}
	if f.market {
		return d + "-market"
	}
	if f.size%1024 == 0 {
		return fmt.Sprintf("%s-%dk", d, f.size/1024)
	}
	return fmt.Sprintf("%s-%d", d, f.size)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a/b) {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// count formats a rate or a count with thousands separators.
func count(v float64) string {
	if v == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func usf(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2fµs", v)
	case v < 1000:
		return fmt.Sprintf("%.1fµs", v)
	}
	return fmt.Sprintf("%.2fms", v/1000)
}

func us(d time.Duration) string { return usf(micros(d)) }

func kibf(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f KiB", v/1024)
}

func kib(v float64) string { return kibf(v) }

func mib(v int64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(v)/(1<<20))
}

// pairedRatios is gh's max rate over rp's in each round: the paths of a
// round run one after the other, so a round's ratio is less exposed to the
// machine's drift than the best of each path over all rounds, which the
// verdict uses.
func pairedRatios(gh, rp []sample) []float64 {
	var out []float64
	for i := range min(len(gh), len(rp)) {
		if r := rp[i].rate(); r > 0 {
			out = append(out, gh[i].rate()/r)
		}
	}
	return out
}

// median of vs, not empty.
func median(vs []float64) float64 {
	fs := slices.Sorted(slices.Values(vs))
	n := len(fs)
	if n%2 == 1 {
		return fs[n/2]
	}
	return (fs[n/2-1] + fs[n/2]) / 2
}
