//go:build linux

// Command wsbench measures the message gateway (gatehouse_ws) at the
// process level: the same backend reached through a gatehouse process,
// through the same binary serving plain Caddy reverse_proxy, and directly,
// with the backend in a process of its own so that its CPU and memory are
// never counted as the proxy's. In one run it prints, for each path and
// with the ratios gatehouse/reverse_proxy and gatehouse/direct:
//
//   - backend->client and client->backend (parsed and authorized by the
//     gateway: a Market topic), for 256 B and 8 KiB messages: the highest
//     sustained message rate, then, at a fixed offered rate all three
//     sustain, the proxy's CPU per message (utime+stime from /proc) and the
//     p50/p99 latency (the sender stamps each message, the receiver
//     subtracts);
//   - the memory per authenticated idle connection at N connections (both
//     legs open): the proxy's peak RSS minus its idle RSS, divided by N;
//   - the cost of permessage-deflate on the gateway: each figure, and
//     backend->client market data (the demo market's Security updates), with
//     compression negotiated by the client next to compression off, round
//     by round, with the goals the gateway's compression is held to, and,
//     backend->client, the backend compressing every message with the
//     gateway passing them through (backend_compression);
//   - with -audit, each throughput figure on the gateway with its audit on
//     next to the same gateway without it;
//
// and the goals it is held to, with PASS or MISS. bench/README.md explains
// every figure. It builds cmd/gatehouse and bench/wsbench/backend into a
// temporary directory, where the servers' logs go too; every server it
// starts is stopped by its pid at the end, on an error and on Ctrl-C. Run it
// on demand from the module root, on an otherwise idle machine, never in CI:
//
//	go run ./bench/wsbench            # the full run, a few minutes on 2 cores
//	go run ./bench/wsbench -quick     # a smoke run of about 30 s
//	go run ./bench/wsbench -cpuprofile /tmp/gh   # + gateway CPU profiles
//	go run ./bench/wsbench -only b2c-256 -audit -rounds 10   # audit on vs off
//
// Linux only: it reads /proc.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	trialOptions
	mem        memOptions
	rounds     int
	rate256    float64
	rate8k     float64
	load       float64
	cpuprofile string
	only       map[string]bool // the parts to run (figure slugs, memory, compression)
	keep       bool
	quick      bool
	audit      bool // a fourth path: the gateway with its audit on
}

// parts are the names -only takes: a throughput figure's slug, "memory"
// or "compression".
var parts = []string{"b2c-256", "b2c-8k", "c2b-256", "c2b-8k", "compression", "memory"}

func main() {
	var o options
	flag.DurationVar(&o.d, "d", 2*time.Second, "the measured window of each throughput trial")
	flag.DurationVar(&o.warm, "warm", 500*time.Millisecond, "warm-up before each window")
	flag.IntVar(&o.conns, "conns", 4, "connections per throughput trial, sharing its load")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds of every throughput trial (the order of the paths rotates)")
	flag.IntVar(&o.mem.n, "n", 10000, "idle connections of the memory figure")
	flag.Float64Var(&o.rate256, "rate256", 0, "offered rate (msg/s, all connections) of the 256 B CPU and latency figures; 0: auto")
	flag.Float64Var(&o.rate8k, "rate8k", 0, "offered rate (msg/s) of the 8 KiB figures; 0: auto")
	flag.Float64Var(&o.load, "load", 0.5, "auto offered rate: this share of the lowest max rate of the three paths")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "profile gatehouse at each offered rate in an extra trial: CPU into `prefix`-<figure>.pprof,\n"+
		"allocations into prefix-<figure>.allocs.pprof")
	only := flag.String("only", strings.Join(parts, ","), "the parts to run, comma-separated: "+strings.Join(parts, ", "))
	flag.BoolVar(&o.audit, "audit", false, "also measure each throughput figure through a second gateway with the audit on (path gatehouse+audit),\n"+
		"its chain in a file of the temporary directory, against the gateway without it")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, Caddyfiles, logs)")
	flag.BoolVar(&o.quick, "quick", false, "a smoke run of about 30 s after the build: -d 300ms -warm 100ms -rounds 1 -n 300,\n"+
		"shorter pauses, compression for backend->client 256 B and market data only")
	flag.Parse()
	o.settle, o.mem.pause, o.mem.idle = 200*time.Millisecond, time.Second, 2*time.Second
	if o.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"d": "300ms", "warm": "100ms", "rounds": "1", "n": "300"} {
			if !set[name] {
				_ = flag.Set(name, v)
			}
		}
		o.settle, o.mem.pause, o.mem.idle = 50*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
	}
	o.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); !slices.Contains(parts, p) {
			fmt.Fprintf(os.Stderr, "wsbench: -only: unknown part %q (known: %s)\n", p, strings.Join(parts, ", "))
			os.Exit(2)
		}
		o.only[p] = true
	}
	if o.d < 100*time.Millisecond || o.warm < 0 || o.conns < 1 || o.conns > 256 || o.rounds < 1 || o.rounds > 10 ||
		o.mem.n < 1 || o.rate256 < 0 || o.rate8k < 0 || o.load <= 0 || o.load > 1 {
		fmt.Fprintln(os.Stderr, "wsbench: bad flags: -d >= 100ms, -warm >= 0, 1 <= -conns <= 256, 1 <= -rounds <= 10, -n >= 1, rates >= 0, 0 < -load <= 1")
		os.Exit(2)
	}

	dir, err := os.MkdirTemp("", "wsbench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsbench:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nwsbench: interrupted; stopping the servers")
		stopAll()
		cleanup(dir, o.keep)
		os.Exit(130)
	}()

	err = run(dir, &o)
	stopAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsbench:", err)
		fmt.Fprintln(os.Stderr, "wsbench: the servers' logs are kept in", dir)
		os.Exit(1)
	}
	cleanup(dir, o.keep)
}

func cleanup(dir string, keep bool) {
	if keep {
		fmt.Fprintln(os.Stderr, "wsbench: kept", dir)
		return
	}
	os.RemoveAll(dir)
}

// progress reports a step on stderr; the figures go to stdout at the end.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "wsbench: "+format+"\n", args...)
}

// The paths, in the order of the tables.
const (
	pathGatehouse = "gatehouse"
	pathProxy     = "reverse_proxy"
	pathDirect    = "direct"
)

var pathNames = []string{pathGatehouse, pathProxy, pathDirect}

// pathAudit is the gateway with its audit on (-audit), measured next to
// pathGatehouse; it is in no table of pathNames but its own.
const pathAudit = "gatehouse+audit"

// figures are the throughput figures, in the order measured and printed.
var figures = []figure{
	{dir: backendToClient, size: 256}, {dir: backendToClient, size: 8 << 10},
	{dir: clientToBackend, size: 256}, {dir: clientToBackend, size: 8 << 10},
}

// results are every figure of the run.
type results struct {
	fdLimit   uint64
	nNote     string
	through   []figureResult
	compress  []compressResult
	memory    map[string]memSample
	profiles  []string
	startedAt time.Time
	auditLog  string // the audit path's chain (-audit)
}

// figureResult is one figure on the three paths.
type figureResult struct {
	f       figure
	offered float64
	max     map[string][]sample // per path, one per round
	fixed   map[string][]sample
}

// run builds, starts the servers, measures every figure and prints them.
func run(dir string, o *options) error {
	r := &results{memory: map[string]memSample{}, startedAt: time.Now()}
	var err error
	if r.fdLimit, err = raiseFileLimit(); err != nil {
		return err
	}
	// A proxy holds two sockets per connection.
	if maxN := (int(r.fdLimit) - fdReserve) / 2; o.mem.n > maxN {
		r.nNote = fmt.Sprintf("asked for %d; the file-descriptor hard limit is %d and a proxy holds two sockets per connection",
			o.mem.n, r.fdLimit)
		o.mem.n = maxN
	}
	progress("building gatehouse and the backend into %s", dir)
	bins, err := build(dir)
	if err != nil {
		return err
	}

	if err := throughput(dir, bins, o, r); err != nil {
		return err
	}
	for _, name := range pathNames {
		if !o.only["memory"] {
			break
		}
		mo := o.mem
		mo.profile = o.cpuprofile
		m, err := memoryFigure(dir, bins, name, mo)
		if err != nil {
			return err
		}
		r.memory[name] = m
		if m.heap != "" {
			r.profiles = append(r.profiles, m.heap)
		}
	}
	report(os.Stdout, r, o)
	return nil
}

// throughput measures the message figures: one backend, the gateway and
// reverse_proxy in front of it (and, with -audit, the gateway with its
// audit on), all running throughout.
func throughput(dir string, bins binaries, o *options, r *results) error {
	ctx := context.Background()
	be, err := startBackend(dir, "backend", bins)
	if err != nil {
		return err
	}
	defer be.stop()
	gh, err := startGateway(dir, "gatehouse", bins, be, o.only["compression"], "")
	if err != nil {
		return err
	}
	defer gh.stop()
	rp, err := startReverseProxy(dir, "reverse_proxy", bins, be)
	if err != nil {
		return err
	}
	defer rp.stop()
	tok, err := gh.token()
	if err != nil {
		return err
	}
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	paths := map[string]*path{
		pathGatehouse: {name: pathGatehouse, url: wsURL(gh.port, wsPath), header: auth, proxy: gh, backend: be},
		pathProxy:     {name: pathProxy, url: wsURL(rp.port, "/ws"), proxy: rp, backend: be},
		pathDirect:    {name: pathDirect, url: wsURL(be.port, "/ws"), backend: be},
	}
	if o.audit {
		if paths[pathAudit], r.auditLog, err = startAuditGateway(dir, bins, be); err != nil {
			return err
		}
		defer paths[pathAudit].proxy.stop()
	}
	ordered := func(round int) []*path {
		ps := make([]*path, 0, len(paths))
		for i := range pathNames {
			ps = append(ps, paths[pathNames[(i+round)%len(pathNames)]])
		}
		return besideGateway(ps, paths[pathAudit], round)
	}

	for _, f := range figures {
		if !o.only[figureSlug(f)] {
			continue
		}
		fr := figureResult{f: f, max: map[string][]sample{}, fixed: map[string][]sample{}}
		for round := range o.rounds {
			for _, p := range ordered(round) {
				s, err := trial(ctx, p, f, 0, o.trialOptions, "")
				if err != nil {
					return fmt.Errorf("%v, max rate: %w", f, err)
				}
				progress("%-22v max rate   %-13s %9.0f msg/s  CPU/msg proxy %v backend %v load %v", f, p.name, s.rate(),
					s.perMsg(s.proxyCPU), s.perMsg(s.backendCPU), s.perMsg(s.loadCPU))
				fr.max[p.name] = append(fr.max[p.name], s)
			}
		}
		fr.offered = offeredRate(f, fr, o)
		for round := range o.rounds {
			for _, p := range ordered(round) {
				s, err := trial(ctx, p, f, fr.offered, o.trialOptions, "")
				if err != nil {
					return fmt.Errorf("%v at %.0f msg/s: %w", f, fr.offered, err)
				}
				progress("%-22v at %.0f/s %-13s proxy %s/msg  p50 %s  p99 %s", f, fr.offered, p.name,
					us(s.perMsg(s.proxyCPU)), us(s.percentile(0.50)), us(s.percentile(0.99)))
				fr.fixed[p.name] = append(fr.fixed[p.name], s)
			}
		}
		if o.cpuprofile != "" {
			// A trial of its own, so the profiler's cost is in no figure.
			prof := fmt.Sprintf("%s-%s", o.cpuprofile, figureSlug(f))
			if _, err := trial(ctx, paths[pathGatehouse], f, fr.offered, o.trialOptions, prof); err != nil {
				return fmt.Errorf("%v, profile: %w", f, err)
			}
			r.profiles = append(r.profiles, prof+".pprof", prof+".allocs.pprof")
		}
		r.through = append(r.through, fr)
	}

	if !o.only["compression"] {
		return nil
	}
	z := &path{name: pathGatehouse + "+deflate", url: wsURL(gh.port, wszPath), header: auth, proxy: gh, backend: be, compress: true}
	zp := &path{name: pathGatehouse + "+passthrough", url: wsURL(gh.port, wspPath), header: auth, proxy: gh, backend: be, compress: true}
	return compression(ctx, paths[pathGatehouse], z, zp, o, r)
}

// offeredRate is the fixed rate of f's CPU and latency figures: the flag,
// or o.load of the lowest max rate of the paths measured (the three, and
// the audit path with -audit), to two significant digits.
func offeredRate(f figure, fr figureResult, o *options) float64 {
	if f.size == 256 && o.rate256 > 0 {
		return o.rate256
	}
	if f.size == 8<<10 && o.rate8k > 0 {
		return o.rate8k
	}
	lowest := 0.0
	for _, ss := range fr.max {
		if best := bestRate(ss); lowest == 0 || best < lowest {
			lowest = best
		}
	}
	return twoDigits(lowest * o.load)
}

func wsURL(port int, path string) string { return fmt.Sprintf("ws://127.0.0.1:%d%s", port, path) }
