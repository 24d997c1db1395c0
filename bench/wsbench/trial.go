//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Margins of a trial around its window.
const (
	setupMargin = 50 * time.Millisecond  // from the start signal to the warm-up
	tailMargin  = 100 * time.Millisecond // the load goes on past the window
	drainLimit  = 30 * time.Second       // for the last queued messages to arrive
)

// direction is which way the messages of a figure go.
type direction int

const (
	backendToClient direction = iota
	clientToBackend
)

// figure is a message direction and size, or, backend->client, the
// market-data payload (the demo market's Security updates, about 290
// bytes each).
type figure struct {
	dir    direction
	size   int
	market bool
}

func (f figure) String() string {
	d := "backend->client"
	if f.dir == clientToBackend {
		d = "client->backend"
	}
	if f.market {
		return d + " market data"
	}
	return fmt.Sprintf("%s %s", d, sizeName(f.size))
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// sample is what one trial measured inside its window.
type sample struct {
	offered    float64 // msg/s; 0: as fast as possible
	msgs       int64
	window     time.Duration
	proxyCPU   time.Duration // 0 when there is no proxy
	backendCPU time.Duration
	loadCPU    time.Duration   // wsbench's own (the clients)
	wire       int64           // bytes the clients read and wrote
	lat        []time.Duration // sorted; only at an offered rate
}

func (s sample) rate() float64 { return float64(s.msgs) / s.window.Seconds() }

func (s sample) perMsg(d time.Duration) time.Duration {
	if s.msgs == 0 {
		return 0
	}
	return d / time.Duration(s.msgs)
}

// percentile is the q-quantile of the latencies, by nearest rank.
func (s sample) percentile(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(s.lat)))) - 1
	return s.lat[min(max(i, 0), len(s.lat)-1)]
}

// trialOptions are the knobs every trial shares.
type trialOptions struct {
	conns   int
	warm, d time.Duration
	settle  time.Duration // after closing, before the next trial
}

// usage is a snapshot of the CPU the processes of a trial used so far, and
// of the client's wire bytes.
type usage struct {
	proxy, backend, load time.Duration
	wire                 int64
}

func snapshot(p *path, wire *atomic.Int64) (usage, error) {
	var u usage
	var err error
	if p.proxy != nil {
		if u.proxy, err = p.proxy.cpu(); err != nil {
			return u, err
		}
	}
	if u.backend, err = p.backend.cpu(); err != nil {
		return u, err
	}
	u.load, u.wire = selfCPU(), wire.Load()
	return u, nil
}

// trial runs one figure through p for a window of o.d after a warm-up of
// o.warm, with o.conns connections sharing rate (0: each as fast as it
// goes). A profile prefix, if set, gets a CPU and an allocation profile of
// the proxy over the window (the profiler's cost is then in the figures).
func trial(ctx context.Context, p *path, f figure, rate float64, o trialOptions, profile string) (sample, error) {
	var wire atomic.Int64
	conns := make([]*websocket.Conn, 0, o.conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		time.Sleep(o.settle)
	}()
	for range o.conns {
		c, err := p.dial(ctx, &wire)
		if err != nil {
			return sample{}, err
		}
		conns = append(conns, c)
	}
	t0 := time.Now().Add(setupMargin + o.warm)
	t1 := t0.Add(o.d)
	until := t1.Add(tailMargin)
	perConn := rate / float64(o.conns)

	// Start the load: the blasts, or the senders.
	errs := make([]error, o.conns)       // the senders'
	refused := make(chan error, o.conns) // a path's answer to a BenchIn
	got := make([]received, o.conns)
	var wg sync.WaitGroup
	if f.dir == backendToClient {
		for i, c := range conns {
			wg.Go(func() { got[i] = receive(c, i, t0, t1, rate > 0, until.Add(drainLimit)) })
			if err := c.WriteMessage(websocket.TextMessage, blastSub(i, f, perConn, until)); err != nil {
				return sample{}, fmt.Errorf("%s: asking for a blast: %w", p.name, err)
			}
		}
	} else {
		if err := setWindow(p.backend, t0, t1); err != nil {
			return sample{}, err
		}
		for i, c := range conns {
			go func() {
				if err := expectSilence(c); err != nil {
					refused <- err
				}
			}()
			wg.Go(func() { _, errs[i] = send(c, f.size, perConn, until) })
		}
	}

	if err := sleepUntil(ctx, t0); err != nil {
		return sample{}, err
	}
	u0, err := snapshot(p, &wire)
	if err != nil {
		return sample{}, err
	}
	profDone := make(chan error, 1)
	if profile != "" && p.proxy != nil {
		go func() { profDone <- p.proxy.profile(profile, max(1, int(o.d.Round(time.Second)/time.Second))) }()
	} else {
		profDone <- nil
	}
	if err := sleepUntil(ctx, t1); err != nil {
		return sample{}, err
	}
	u1, err := snapshot(p, &wire)
	if err != nil {
		return sample{}, err
	}
	wg.Wait()
	s := sample{
		offered: rate, window: o.d,
		proxyCPU: u1.proxy - u0.proxy, backendCPU: u1.backend - u0.backend, loadCPU: u1.load - u0.load,
		wire: u1.wire - u0.wire,
	}
	if f.dir == backendToClient {
		for _, r := range got {
			if r.err != nil {
				return s, fmt.Errorf("%s: %w", p.name, r.err)
			}
			s.msgs += r.n
			s.lat = append(s.lat, r.lat...)
		}
	} else {
		st, err := windowStats(p.backend)
		if err != nil {
			return s, err
		}
		s.msgs = st.Count
		if rate > 0 {
			for _, l := range st.Latencies {
				s.lat = append(s.lat, time.Duration(l))
			}
		}
		// A refusal arrives before the close; give the readers a moment.
		time.Sleep(20 * time.Millisecond)
		select {
		case err := <-refused:
			errs = append(errs, err)
		default:
		}
		if err := errors.Join(errs...); err != nil {
			return s, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	if err := <-profDone; err != nil {
		return s, err
	}
	if s.msgs == 0 {
		return s, fmt.Errorf("%s: %w", p.name, errNoMessages)
	}
	slices.Sort(s.lat)
	return s, nil
}

// setWindow tells the backend which BenchIn arrivals to count.
func setWindow(b *backend, from, to time.Time) error {
	u := b.url(fmt.Sprintf("/bench/window?from=%d&to=%d", from.UnixNano(), to.UnixNano()))
	resp, err := httpClient.Post(u, "", nil)
	if err != nil {
		return fmt.Errorf("backend window: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("backend window: HTTP %d", resp.StatusCode)
	}
	return nil
}

// backendStats is what the backend counted in its window.
type backendStats struct {
	Count     int64   `json:"count"`
	Latencies []int64 `json:"latencies_ns"`
}

func windowStats(b *backend) (backendStats, error) {
	var st backendStats
	body, err := httpGet(b.url("/bench/stats"))
	if err != nil {
		return st, fmt.Errorf("backend stats: %w", err)
	}
	return st, json.Unmarshal(body, &st)
}

// sleepUntil sleeps until t, or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
