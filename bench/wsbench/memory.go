//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Parameters of the memory figure.
const (
	warmConns       = 16               // opened and closed before the idle RSS
	dialConcurrency = 32               // dials in flight while opening N
	legsLimit       = 60 * time.Second // for every backend leg to be open
)

// memOptions are the memory figure's knobs.
type memOptions struct {
	n     int
	pause time.Duration // after the warm-up connections, before the idle RSS
	idle  time.Duration // after the last leg opened, before the settled RSS
	// profile, if set, is the prefix of the heap profiles of the proxies
	// with the N connections open.
	profile string
}

// fdReserve is the file descriptors a process needs besides its sockets
// to clients and backend (listeners, the store, logs).
const fdReserve = 128

// memSample is the memory figure of one path.
type memSample struct {
	want, n     int           // connections asked for, and open with both legs
	open        time.Duration // to open them
	proxy, back rss           // the proxy's (none for direct) and the backend's
	err         error         // why fewer than want were opened
	heap        string        // the proxy's heap profile, if taken
	// The proxy's Go runtime at idle and with the connections open (from
	// its admin endpoint's /metrics).
	goIdle, goOpen goStats
	goLive         float64 // the heap in use after a forced collection
}

// goStats are a Go process's heap in use, goroutine stacks and goroutines.
type goStats struct{ heap, live, stacks, goroutines float64 }

// readGoStats reads goStats from the /metrics of a Caddy admin endpoint.
func readGoStats(admin int) (goStats, error) {
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", admin))
	if err != nil {
		return goStats{}, err
	}
	var g goStats
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_heap_inuse_bytes":
			dst = &g.heap
		case "go_memstats_stack_inuse_bytes":
			dst = &g.stacks
		case "go_goroutines":
			dst = &g.goroutines
		default:
			continue
		}
		if *dst, err = strconv.ParseFloat(value, 64); err != nil {
			return g, fmt.Errorf("metrics: %s: %w", name, err)
		}
	}
	return g, nil
}

// goPerConn is (open - idle) / n, field by field.
func (m memSample) goPerConn() goStats {
	if m.n == 0 {
		return goStats{}
	}
	n := float64(m.n)
	return goStats{
		heap:       (m.goOpen.heap - m.goIdle.heap) / n,
		live:       (m.goLive - m.goIdle.heap) / n,
		stacks:     (m.goOpen.stacks - m.goIdle.stacks) / n,
		goroutines: (m.goOpen.goroutines - m.goIdle.goroutines) / n,
	}
}

// rss is a process's resident set: idle before the connections, its peak
// (VmHWM) while they were opened, and settled once they were idle.
type rss struct{ idle, peak, settled int64 }

// perConn is (v - idle) / n: bytes per connection.
func (r rss) perConn(v int64, n int) float64 {
	if n == 0 || r.idle == 0 {
		return 0
	}
	return float64(v-r.idle) / float64(n)
}

// memoryTrial opens o.n idle connections through p (authenticated on the
// gateway) and reads the resident sets of the proxy and the backend, which
// were started for this figure alone (so VmHWM is this figure's peak).
// With heap set, the proxy's heap profile is written there at the end.
func memoryTrial(ctx context.Context, p *path, o memOptions, heap string) (memSample, error) {
	m := memSample{want: o.n}
	var mu sync.Mutex
	var conns []*websocket.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()

	// Warm-up: the code paths' one-time allocations belong to the idle
	// figure, not to the connections.
	for range warmConns {
		c, err := p.dial(ctx, nil)
		if err != nil {
			return m, err
		}
		c.Close()
	}
	if err := sleepUntil(ctx, time.Now().Add(o.pause)); err != nil {
		return m, err
	}
	var err error
	if p.proxy != nil {
		if m.proxy.idle, _, err = p.proxy.memory(); err != nil {
			return m, err
		}
		if m.goIdle, err = readGoStats(p.proxy.admin); err != nil {
			return m, err
		}
	}
	if m.back.idle, _, err = p.backend.memory(); err != nil {
		return m, err
	}

	// Open n, each with a reader that answers the proxy's pings, so no
	// connection goes idle-timed-out however long the opening takes.
	start := time.Now()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan struct{})
	var wg sync.WaitGroup
	for range dialConcurrency {
		wg.Go(func() {
			for range next {
				c, err := p.dial(dctx, nil)
				mu.Lock()
				if err != nil {
					if m.err == nil && dctx.Err() == nil {
						m.err = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				conns = append(conns, c)
				mu.Unlock()
				go func() {
					for {
						if _, _, err := c.NextReader(); err != nil {
							return
						}
					}
				}()
			}
		})
	}
	for range o.n {
		if dctx.Err() != nil {
			break
		}
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return m, ctx.Err()
	}
	mu.Lock()
	opened := len(conns)
	mu.Unlock()

	// Every backend leg open: the gateway opens its leg after the 101.
	deadline := time.Now().Add(legsLimit)
	for {
		legs, err := p.backend.openConns()
		if err != nil {
			return m, err
		}
		if legs >= opened {
			break
		}
		if time.Now().After(deadline) {
			m.err = fmt.Errorf("only %d of %d backend legs open after %v", legs, opened, legsLimit)
			opened = legs
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.n, m.open = opened, time.Since(start)
	if err := sleepUntil(ctx, time.Now().Add(o.idle)); err != nil {
		return m, err
	}
	if p.proxy != nil {
		if m.proxy.settled, m.proxy.peak, err = p.proxy.memory(); err != nil {
			return m, err
		}
		if m.goOpen, err = readGoStats(p.proxy.admin); err != nil {
			return m, err
		}
	}
	if p.proxy != nil {
		// The live heap: a heap profile with gc=1 collects first. After
		// the RSS figures, so that they are the process's own.
		if _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", p.proxy.admin)); err != nil {
			return m, err
		}
		g, err := readGoStats(p.proxy.admin)
		if err != nil {
			return m, err
		}
		m.goLive = g.heap
	}
	if m.back.settled, m.back.peak, err = p.backend.memory(); err != nil {
		return m, err
	}
	if heap != "" {
		u := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", p.proxy.admin)
		if err := fetchProfile(u, heap, 0); err != nil {
			return m, err
		}
		m.heap = heap
	}
	return m, nil
}

// memoryFigure measures the memory per idle connection on one path, with
// a backend and a proxy started for it alone.
func memoryFigure(dir string, bins binaries, name string, o memOptions) (memSample, error) {
	be, err := startBackend(dir, "mem-backend-"+name, bins)
	if err != nil {
		return memSample{}, err
	}
	defer be.stop()
	p := &path{name: name, url: wsURL(be.port, "/ws"), backend: be}
	switch name {
	case pathGatehouse:
		gh, err := startGateway(dir, "mem-"+name, bins, be, false, "")
		if err != nil {
			return memSample{}, err
		}
		defer gh.stop()
		tok, err := gh.token()
		if err != nil {
			return memSample{}, err
		}
		p.url, p.header, p.proxy = wsURL(gh.port, wsPath), http.Header{"Authorization": {"Bearer " + tok}}, gh
	case pathProxy:
		rp, err := startReverseProxy(dir, "mem-"+name, bins, be)
		if err != nil {
			return memSample{}, err
		}
		defer rp.stop()
		p.url, p.proxy = wsURL(rp.port, "/ws"), rp
	}
	progress("memory: opening %d idle connections through %s", o.n, name)
	heap := ""
	if o.profile != "" && p.proxy != nil {
		heap = fmt.Sprintf("%s-memory-%s.heap.pprof", o.profile, name)
	}
	m, err := memoryTrial(context.Background(), p, o, heap)
	if err != nil {
		return m, fmt.Errorf("memory through %s: %w", name, err)
	}
	progress("memory: %s: %d connections in %v, proxy +%s/conn (peak), backend +%s/conn (peak)", name, m.n,
		m.open.Round(time.Millisecond), kib(m.proxy.perConn(m.proxy.peak, m.n)), kib(m.back.perConn(m.back.peak, m.n)))
	return m, nil
}
