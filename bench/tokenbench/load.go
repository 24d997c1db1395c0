package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"time"
)

// maxOpsPerWorker bounds a worker's loop besides its deadline.
const maxOpsPerWorker = 1 << 24

// errStop marks a failure after which a worker cannot go on (a broken
// refresh chain).
var errStop = errors.New("worker stopped")

// op performs one operation of a worker.
type op func(ctx context.Context) error

// setupFunc prepares worker i before the clock starts (a login, a warm-up
// request that opens its connection) and returns its operation.
type setupFunc func(ctx context.Context, i int) (op, error)

// phase is one measured figure.
type phase struct {
	name     string
	ops      int             // successful operations
	errs     int             // failed operations
	stopped  int             // workers that stopped on an errStop
	firstErr error           // the first failure
	elapsed  time.Duration   // from the start until the last worker ended
	cpu      time.Duration   // process CPU (user+system) in that time; 0 if unknown
	lat      []time.Duration // sorted latencies of every operation
}

// rate is successful operations per second.
func (p phase) rate() float64 { return float64(p.ops) / p.elapsed.Seconds() }

// util is the share of GOMAXPROCS cores the process used; 0 if unknown.
// Well under 100% while the workers are CPU-bound means other processes
// took the cores.
func (p phase) util() float64 {
	return p.cpu.Seconds() / (p.elapsed.Seconds() * float64(runtime.GOMAXPROCS(0)))
}

// cpuPerOp is the process CPU per successful operation; 0 if unknown.
func (p phase) cpuPerOp() time.Duration {
	if p.ops == 0 {
		return 0
	}
	return p.cpu / time.Duration(p.ops)
}

// percentile returns the q-quantile (0 < q <= 1) of the latencies, by
// nearest rank.
func (p phase) percentile(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	i := int(q*float64(len(p.lat))+0.5) - 1
	return p.lat[min(max(i, 0), len(p.lat)-1)]
}

// tally is what one worker counted.
type tally struct {
	ok, errs int
	stopped  bool
	first    error
	lat      []time.Duration
}

// workers are operations set up and ready to run.
type workers struct {
	name string
	ops  []op
}

// prepare sets up c workers concurrently (so each warm-up opens its own
// connection). Workers run under the pprof label role=loadgen, which the
// goroutines they start (the HTTP transport's) inherit, so a CPU profile
// tells the load generator from the server.
func prepare(ctx context.Context, name string, c int, setup setupFunc) (workers, error) {
	ops := make([]op, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	for i := range c {
		wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("role", "loadgen"), func(ctx context.Context) {
				ops[i], errs[i] = setup(ctx, i)
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return workers{}, fmt.Errorf("%s: setting up workers: %w", name, err)
	}
	return workers{name: name, ops: ops}, nil
}

// run runs the workers together for d and adds up what they counted.
func (ws workers) run(ctx context.Context, d time.Duration) phase {
	tallies := make([]tally, len(ws.ops))
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	for i, o := range ws.ops {
		wg.Go(func() {
			pprof.Do(ctx, pprof.Labels("role", "loadgen"), func(ctx context.Context) {
				tallies[i] = loop(ctx, o, deadline)
			})
		})
	}
	wg.Wait()
	p := phase{name: ws.name, elapsed: time.Since(start)}
	if cpu1 := cpuTime(); cpu0 > 0 {
		p.cpu = cpu1 - cpu0
	}
	for _, t := range tallies {
		p.ops += t.ok
		p.errs += t.errs
		if t.stopped {
			p.stopped++
		}
		if p.firstErr == nil {
			p.firstErr = t.first
		}
		p.lat = append(p.lat, t.lat...)
	}
	slices.Sort(p.lat)
	return p
}

// merge adds up two runs of the same workers.
func merge(a, b phase) phase {
	a.ops += b.ops
	a.errs += b.errs
	a.stopped += b.stopped
	if a.firstErr == nil {
		a.firstErr = b.firstErr
	}
	a.elapsed += b.elapsed
	a.cpu += b.cpu
	a.lat = append(a.lat, b.lat...)
	slices.Sort(a.lat)
	return a
}

// measure prepares c workers and runs them for d.
func measure(ctx context.Context, name string, c int, d time.Duration, setup setupFunc) (phase, error) {
	ws, err := prepare(ctx, name, c, setup)
	if err != nil {
		return phase{}, err
	}
	return ws.run(ctx, d), nil
}

// loop runs o until the deadline (or maxOpsPerWorker times, or an errStop).
func loop(ctx context.Context, o op, deadline time.Time) tally {
	t := tally{lat: make([]time.Duration, 0, 1<<12)}
	for n := 0; n < maxOpsPerWorker; n++ {
		t0 := time.Now()
		if !t0.Before(deadline) {
			break
		}
		err := o(ctx)
		t.lat = append(t.lat, time.Since(t0))
		if err == nil {
			t.ok++
			continue
		}
		t.errs++
		if t.first == nil {
			t.first = err
		}
		if errors.Is(err, errStop) {
			t.stopped = true
			break
		}
	}
	return t
}
