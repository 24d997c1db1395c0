//go:build linux

// Command soak holds many message-gateway sessions for a long time and reports what
// time does to the gateway process: the gatehouse binary in a process of its own,
// relaying to the demo market-data backend in another (the same binary, a config with
// only the backend), and the sessions in this one. Run it on demand, never in CI:
//
//	go run ./bench/soak                      # 2,000 sessions for 10 minutes
//	go run ./bench/soak -n 500 -d 60m
//	go run ./bench/soak -slow-readers        # what clients that do not read cost (slowread.go)
//
// Each session authenticates with a client_credentials access token of 60 s on the
// upgrade, renews it with AuthToken before it expires, subscribes to two or three
// securities and churns them (an Unsub and a Sub every half minute or so); a tenth of
// the sessions read slowly (a pause between reads). The backend pings the gateway
// every 5 s, and is restarted once, halfway (the sessions then reconnect). A few
// sessions have their token revoked, and a few stop renewing theirs: both lapse, and
// are closed after the expiry grace (20 s). Every minute the gateway's configuration
// is reloaded, unchanged (reload.go): no session may end for it. Each minute it prints the gateway's RSS,
// heap in use and goroutines, the open sessions, the messages relayed, and the
// sessions ended by cause; at the end, after every session closed, whether the
// gateway restarted, its goroutines and heap against the baseline (taken after a
// warm-up that is the soak in small), every healthy session's minutes without a tick, and any session that
// ended by a cause the run did not cause on purpose.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

var securities = []string{"BHP", "CBA", "CSL", "NAB", "WBC", "WES"}

const secret = "soak-secret-not-for-production"

type options struct {
	n       int
	d       time.Duration
	warmup  time.Duration
	slow    float64
	idle    time.Duration
	settle  time.Duration
	keepDir bool

	reloadEvery time.Duration

	slowReaders              bool
	readers, senders, silent int
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 2000, "sessions")
	flag.DurationVar(&o.d, "d", 10*time.Minute, "how long the sessions are held")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Minute, "how long the same sessions are held before the baseline is taken")
	flag.Float64Var(&o.slow, "slow", 0.1, "the share of sessions that read slowly")
	flag.DurationVar(&o.settle, "settle", 135*time.Second, "after the sessions closed, how long to wait before comparing with the baseline: past the tokens' expiry (60 s), the verifier's cache sweep (every minute) and the lingering of closed sockets (30 s)")
	flag.DurationVar(&o.idle, "idle", 5*time.Minute, "then how much longer to wait before the last RSS")
	flag.BoolVar(&o.keepDir, "keep", false, "keep the temporary directory (binary, configs, logs)")
	flag.DurationVar(&o.reloadEvery, "reload-every", time.Minute, "how often the gateway's configuration is reloaded, unchanged (0: never)")
	flag.BoolVar(&o.slowReaders, "slow-readers", false, "measure what clients that do not read cost, instead of the soak")
	flag.IntVar(&o.readers, "readers", 160, "with -slow-readers: the reading sessions")
	flag.IntVar(&o.senders, "senders", 20, "with -slow-readers: the clients sending large Subs without reading")
	flag.IntVar(&o.silent, "silent", 20, "with -slow-readers: the clients that subscribe and never read")
	flag.Parse()
	do := run
	if o.slowReaders {
		do = slowReaders
	}
	if err := do(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// proc is a gatehouse process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(bin, dir, name, config string, env []string) (*proc, error) {
	logf, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--config", config)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, name+"-data")), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitHTTP(url string, want int) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if want == 0 || resp.StatusCode == want {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %d", url, want)
}

// instance is a gatehouse process and the demo backend's, from the binary
// built in dir.
type instance struct {
	keep                 bool
	dir, bin, backendCfg string
	gwCfg, admin         string // the gateway's Caddyfile, and its admin endpoint's origin
	backendPort          int
	backend, gw          *proc
	base, ws             string // the gateway's origin, and its socket's URL
	m                    *monitor
}

// setup builds cmd/gatehouse and starts the backend (its gatehouse_demo_backend
// block given backendOpts) and the gateway (its gatehouse_ws block given wsOpts).
func setup(o options, backendOpts, wsOpts string) (_ *instance, err error) {
	in := &instance{keep: o.keepDir}
	if in.dir, err = os.MkdirTemp("", "soak-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	if in.keep {
		fmt.Fprintln(os.Stderr, "soak: keeping", in.dir)
	}
	in.bin = filepath.Join(in.dir, "gatehouse")
	fmt.Fprintln(os.Stderr, "soak: building cmd/gatehouse")
	if out, err := exec.Command("go", "build", "-o", in.bin, "./cmd/gatehouse").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	backendAdmin, port, admin := freePort(), freePort(), freePort()
	in.backendPort = freePort()
	in.backendCfg = filepath.Join(in.dir, "Caddyfile.backend")
	if err := os.WriteFile(in.backendCfg, []byte(fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
}
http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_demo_backend {
		ping_interval 5s
		idle_timeout 60s
		max_connections 100000
%s	}
}
`, backendAdmin, in.backendPort, backendOpts)), 0o600); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(secret))
	in.gwCfg = filepath.Join(in.dir, "Caddyfile")
	in.admin = fmt.Sprintf("http://127.0.0.1:%d", admin)
	if err := os.WriteFile(in.gwCfg, []byte(fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	gatehouse {
		issuer http://127.0.0.1:%d
		access_token_lifetime 60s
		client soak {
			secret_sha256 %s
			grant_types client_credentials
			scopes Service/Market
		}
	}
}
http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_identity
	gatehouse_ws /ws {
		upstream ws://127.0.0.1:%d/
		expiry_grace 20s
		max_unauthenticated 100000
		limits {
			sessions 100000
		}
%s	}
}
`, admin, port, hex.EncodeToString(sum[:]), port, in.backendPort, wsOpts)), 0o600); err != nil {
		return nil, err
	}
	if err := in.startBackend(); err != nil {
		return nil, err
	}
	if in.gw, err = start(in.bin, in.dir, "gatehouse", in.gwCfg, nil); err != nil {
		return nil, err
	}
	in.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	in.ws = fmt.Sprintf("ws://127.0.0.1:%d/ws?version=1.1", port)
	if err := waitHTTP(in.base+"/.well-known/openid-configuration", 200); err != nil {
		return nil, err
	}
	in.m = &monitor{pid: in.gw.cmd.Process.Pid, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", admin),
		pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", admin)}
	return in, nil
}

func (in *instance) startBackend() (err error) {
	if in.backend, err = start(in.bin, in.dir, "backend", in.backendCfg, nil); err != nil {
		return err
	}
	return waitHTTP(fmt.Sprintf("http://127.0.0.1:%d/", in.backendPort), 0)
}

func (in *instance) restartBackend() error {
	in.backend.stop()
	return in.startBackend()
}

// close stops both processes and removes the directory unless kept.
func (in *instance) close() {
	if in.gw != nil {
		in.gw.stop()
	}
	if in.backend != nil {
		in.backend.stop()
	}
	if !in.keep {
		_ = os.RemoveAll(in.dir)
	}
}

func run(o options) error {
	in, err := setup(o, "", "")
	if err != nil {
		return err
	}
	defer in.close()
	m, gw := in.m, in.gw
	fmt.Printf("soak: %d sessions for %v, %.0f%% slow readers; gatehouse pid %d\n", o.n, o.d, o.slow*100, m.pid)
	// The baseline is taken after a warm-up that is the soak in small: as many
	// sessions of every kind, held at once, the backend restarted halfway. The
	// runtime keeps what a process once needed (every goroutine's struct,
	// golang/go#9869, and the timer heaps grown for every socket's deadlines):
	// after the warm-up, the process has needed as much as the soak will, so
	// what differs at the end is what the hours added. It is compared once the
	// tokens have expired and been swept (settle).
	fmt.Printf("warm-up: the same sessions for %v\n", o.warmup)
	warm := newRunState(in)
	if err := warm.soak(in, o, o.warmup, false); err != nil {
		return err
	}
	if u := warm.unexpected.Load(); u > 0 {
		return fmt.Errorf("warm-up: %d sessions ended by a cause the run did not cause (%s)", u, warm.endsText())
	}
	time.Sleep(o.settle)
	m.collect()
	baseline := m.sample()
	baseLive := m.live()
	fmt.Printf("baseline, after the warm-up (goroutines at most %d) and %v: RSS %s, heap in use %s, live %s, goroutines %d\n",
		warm.peak.Load(), o.settle, mib(baseline.rss), mib(baseline.heap), mib(baseline.live), baseline.goroutines)

	r := newRunState(in)
	outcomes := m.reloadOutcomes()
	if err := r.soak(in, o, o.d, true); err != nil {
		return err
	}
	// Heap in use is compared once the tokens have expired, the verifier's
	// cache has swept them and the lingering sockets have closed (settle), each
	// time after two forced collections (the second empties the sync.Pools the
	// first left in their victim caches).
	time.Sleep(o.settle)
	m.collect()
	end := m.sample()
	endLive := m.live()
	if o.keepDir {
		m.profile(filepath.Join(in.dir, "heap.pprof"))
		fmt.Fprintln(os.Stderr, "soak: heap profile in", filepath.Join(in.dir, "heap.pprof"))
	}
	fmt.Printf("\n%v after every session closed: RSS %s, heap in use %s, goroutines %d, sessions %.0f\n",
		o.settle, mib(end.rss), mib(end.heap), end.goroutines, end.sessions)
	fmt.Printf("gatehouse restarts: %d\n", map[bool]int{true: 0, false: 1}[gw.alive()])
	fmt.Printf("goroutines: %d against %d before the sessions (%+d); at most %d during the soak, %d during the warm-up\n",
		end.goroutines, baseline.goroutines, end.goroutines-baseline.goroutines, r.peak.Load(), warm.peak.Load())
	fmt.Printf("heap in use: %s against %s (%+.1f%%)\n", mib(end.heap), mib(baseline.heap), 100*(end.heap-baseline.heap)/baseline.heap)
	fmt.Printf("live heap (after collection): %s against %s (%+.1f%%)\n", mib(end.live), mib(baseline.live), 100*(end.live-baseline.live)/baseline.live)
	fmt.Printf("  live objects (heap profile): %s against %s; of them the runtime's structs of ended goroutines, which Go never frees (golang/go#9869): %s against %s\n",
		mib(endLive.total), mib(baseLive.total), mib(endLive.deadG), mib(baseLive.deadG))
	fmt.Printf("  live objects but those: %s against %s (%+.1f%%)\n", mib(endLive.total-endLive.deadG), mib(baseLive.total-baseLive.deadG),
		100*((endLive.total-endLive.deadG)-(baseLive.total-baseLive.deadG))/(baseLive.total-baseLive.deadG))
	fmt.Printf("sessions ended by cause: %s\n", r.endsText())
	fmt.Printf("healthy session-minutes subscribed without a tick: %d of %d\n", r.starved.Load(), r.minutes.Load())
	r.reloadReport(m, outcomes)
	if u := r.unexpected.Load(); u > 0 {
		fmt.Printf("sessions ended by a cause the run did not cause: %d\n", u)
	} else {
		fmt.Println("every session ended by a cause the run caused on purpose")
	}
	if o.idle > 0 {
		time.Sleep(o.idle)
		fmt.Printf("RSS after %v idle: %s\n", o.idle, mib(m.sample().rss))
	}
	return nil
}

// soak holds o.n sessions for d, restarting the backend once halfway, and
// samples the gateway every few seconds (its goroutines' peak); with print, it
// prints a line each minute.
func (r *runState) soak(in *instance, o options, d time.Duration, print bool) error {
	m := in.m
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range o.n {
		kind := kindHealthy
		switch {
		case i < 3:
			kind = kindRevoked
		case i < 6:
			kind = kindUnrenewed
		case float64(i%100) < o.slow*100:
			kind = kindSlow
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.session(ctx, i, kind)
		}()
		if i%50 == 49 {
			time.Sleep(100 * time.Millisecond) // a ramp, not a stampede
		}
	}
	started := time.Now()
	restarted := false
	peek := time.NewTicker(5 * time.Second)
	defer peek.Stop()
	lastPrint, minute := time.Now(), 0
	var reloadTick <-chan time.Time
	if o.reloadEvery > 0 {
		t := time.NewTicker(o.reloadEvery)
		defer t.Stop()
		reloadTick = t.C
	}
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-reloadTick:
			r.reloads.Add(1)
			if err := in.reload(); err != nil {
				r.reloadFailures.Add(1)
				fmt.Fprintln(os.Stderr, "soak:", err)
			}
		case <-peek.C:
			s := m.sample()
			r.notePeak(s.goroutines)
			if print && time.Since(lastPrint) >= time.Minute {
				lastPrint = lastPrint.Add(time.Minute)
				minute++
				fmt.Printf("min %3d  RSS %s  heap %s  goroutines %6d  sessions %5.0f  relayed %9.0f  delivered %11.0f  reloads %3d  ended %s\n",
					minute, mib(s.rss), mib(s.heap), s.goroutines, s.sessions, s.relayed, s.delivered, r.reloads.Load(), r.endsText())
			}
			if !restarted && time.Since(started) >= d/2 {
				restarted = true
				r.backendRestart.Store(true)
				r.restartedAt.Store(time.Now().UnixNano())
				if print {
					fmt.Println("restarting the backend")
				}
				if err := in.restartBackend(); err != nil {
					return err
				}
			}
		}
	}
	// The peak goes on being watched while the sessions close.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			r.notePeak(m.sample().goroutines)
			return nil
		case <-peek.C:
			r.notePeak(m.sample().goroutines)
		}
	}
}

type sessionKind int

const (
	kindHealthy sessionKind = iota
	kindSlow
	kindRevoked
	kindUnrenewed
)

type runState struct {
	base, ws       string
	peak           atomic.Int64 // the most goroutines the gateway had at a sample
	mu             sync.Mutex
	ends           map[string]int
	starved        atomic.Int64 // healthy session-minutes without a tick
	minutes        atomic.Int64 // healthy session-minutes counted
	unexpected     atomic.Int64
	backendRestart atomic.Bool
	restartedAt    atomic.Int64 // when the backend was restarted (Unix ns)
	reloads        atomic.Int64 // the gateway's config reloads
	reloadFailures atomic.Int64
	tokenRetries   atomic.Int64 // token renewals asked again after a failure (renewToken)
	closedByReload atomic.Int64 // sessions the gateway closed with 1012 (a reload it did not keep them across)
}

func (r *runState) ended(cause string, expected bool) {
	r.mu.Lock()
	r.ends[cause]++
	r.mu.Unlock()
	if !expected {
		r.unexpected.Add(1)
	}
}

func newRunState(in *instance) *runState {
	return &runState{base: in.base, ws: in.ws, ends: map[string]int{}}
}

func (r *runState) notePeak(goroutines int) {
	for {
		p := r.peak.Load()
		if int64(goroutines) <= p || r.peak.CompareAndSwap(p, int64(goroutines)) {
			return
		}
	}
}

func (r *runState) endsText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for k, v := range r.ends {
		fmt.Fprintf(&b, "%s=%d ", k, v)
	}
	return strings.TrimSpace(b.String())
}

// renewToken is token, asked again up to three times a second apart when
// it fails, as a client renewing a live session's token does: a request
// sent on a kept-alive connection just as a config reload closes the old
// server's idle connections fails on the wire (a POST is not retried by
// net/http), and a renewal given up would lapse the session 15 s later.
// Each retry is counted (tokenRetries).
func (r *runState) renewToken(ctx context.Context) (string, error) {
	tok, err := r.token()
	for i := 0; err != nil && i < 3 && ctx.Err() == nil; i++ {
		if r.tokenRetries.Add(1) <= 3 {
			fmt.Printf("token renewal failed, asking again: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
		tok, err = r.token()
	}
	return tok, err
}

// tokenClient asks for tokens, each request bounded.
var tokenClient = &http.Client{Timeout: 10 * time.Second}

// token is a client_credentials access token of client soak.
func (r *runState) token() (string, error) {
	resp, err := tokenClient.PostForm(r.base+"/connect/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"soak"}, "client_secret": {secret}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.AccessToken == "" {
		return "", fmt.Errorf("token: %s %v", resp.Status, err)
	}
	return t.AccessToken, nil
}

func (r *runState) revoke(tok string) {
	resp, err := http.PostForm(r.base+"/connect/revocation", url.Values{"token": {tok}, "client_id": {"soak"}, "client_secret": {secret}})
	if err == nil {
		resp.Body.Close()
	}
}

// session holds one session until ctx ends, connecting again after the backend's
// restart.
func (r *runState) session(ctx context.Context, i int, kind sessionKind) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	for ctx.Err() == nil {
		cause, expected := r.once(ctx, rng, kind)
		r.ended(cause, expected)
		if cause != "backend restart" {
			return
		}
		time.Sleep(time.Duration(1000+rng.IntN(2000)) * time.Millisecond) // reconnect, spread
	}
}

// once runs one connection of a session: its end's cause, and whether the run caused
// it on purpose.
func (r *runState) once(ctx context.Context, rng *rand.Rand, kind sessionKind) (string, bool) {
	tok, err := r.token()
	if err != nil {
		return "token request failed", false
	}
	d := websocket.Dialer{Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 30 * time.Second}
	c, _, err := d.DialContext(ctx, r.ws, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		if ctx.Err() != nil {
			return "run over", true
		}
		return "dial failed", false
	}
	defer c.Close()
	var wmu sync.Mutex
	send := func(msg string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		return c.WriteMessage(websocket.TextMessage, []byte(msg))
	}
	txid := 0
	subs := map[string]bool{}
	sub := func(code, action string) error {
		txid++
		return send(`{"Controller":"Market","Topic":"Security!` + code + `.ASX","Action":"` + action + `","TransactionID":` + strconv.Itoa(txid) + `}`)
	}
	for len(subs) < 2+rng.IntN(2) {
		code := securities[rng.IntN(len(securities))]
		if !subs[code] {
			subs[code] = true
			_ = sub(code, "Sub")
		}
	}
	var ticks atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		for {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
			_, msg, err := c.ReadMessage()
			if err != nil {
				readDone <- err
				return
			}
			if bytes.Contains(msg, []byte(`"Topic":"Security!`)) && !bytes.Contains(msg, []byte(`"Action":"Error"`)) {
				ticks.Add(1)
			}
			if kind == kindSlow {
				time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
			}
		}
	}()
	renew := time.NewTicker(45 * time.Second)
	defer renew.Stop()
	churn := time.NewTicker(time.Duration(20+rng.IntN(20)) * time.Second)
	defer churn.Stop()
	minute := time.NewTicker(time.Minute)
	defer minute.Stop()
	lastTicks := int64(0)
	revokeAt := time.After(time.Duration(90+rng.IntN(60)) * time.Second)
	for {
		select {
		case <-ctx.Done():
			wmu.Lock()
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
			wmu.Unlock()
			select {
			case <-readDone:
			case <-time.After(10 * time.Second):
			}
			return "run over", true
		case err := <-readDone:
			return r.cause(err, kind)
		case <-revokeAt:
			if kind == kindRevoked {
				r.revoke(tok)
			}
		case <-renew.C:
			if kind == kindUnrenewed {
				continue
			}
			if t, err := r.renewToken(ctx); err == nil {
				tok = t
				txid++
				_ = send(`{"Controller":"Auth","Topic":"AuthToken","TransactionID":` + strconv.Itoa(txid) +
					`,"Data":{"Provider":"Bearer","AccessToken":"` + tok + `"}}`)
			}
		case <-churn.C:
			for code := range subs {
				delete(subs, code)
				_ = sub(code, "Unsub")
				break
			}
			for {
				code := securities[rng.IntN(len(securities))]
				if !subs[code] {
					subs[code] = true
					_ = sub(code, "Sub")
					break
				}
			}
		case <-minute.C:
			if kind == kindHealthy {
				n := ticks.Load()
				r.minutes.Add(1)
				// The minute in which the backend was restarted does not count.
				if n == lastTicks && time.Since(time.Unix(0, r.restartedAt.Load())) > 70*time.Second {
					r.starved.Add(1)
				}
				lastTicks = n
			}
		}
	}
}

// cause names why a connection ended, and whether the run caused it on purpose.
func (r *runState) cause(err error, kind sessionKind) (string, bool) {
	if ce, ok := errors.AsType[*websocket.CloseError](err); ok {
		switch {
		case ce.Code == websocket.CloseGoingAway && r.backendRestart.Load():
			return "backend restart", true
		case (ce.Code == websocket.CloseInternalServerErr || ce.Code == websocket.CloseTryAgainLater) && r.backendRestart.Load():
			return "backend restart", true // 1013: a dial while the backend was down
		case ce.Code == websocket.ClosePolicyViolation && (kind == kindRevoked || kind == kindUnrenewed):
			return "lapsed past grace", true
		case ce.Code == websocket.ClosePolicyViolation && kind == kindSlow:
			return "slow reader closed", true
		case ce.Code == websocket.CloseServiceRestart:
			r.closedByReload.Add(1)
			return "closed by a reload (1012)", false
		}
		return "close " + strconv.Itoa(ce.Code), false
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "read error (reset)", false
	case errors.Is(err, syscall.EPIPE):
		// Gorilla's reader answers a ping and returns the pong's write error:
		// the gateway closed the socket before the client read that far.
		return "read error (closed before the client read its close frame)", false
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "read error (EOF without a close frame)", false
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "read error (2 min without a message)", false
	}
	return "read error (" + err.Error() + ")", false
}

// monitor samples the gatehouse process.
type monitor struct {
	pid     int
	metrics string // its admin endpoint's /metrics
	pprof   string // its admin endpoint's /debug/pprof/
}

// collect has the gatehouse process collect garbage, twice (through its
// admin endpoint's heap profile, which collects first when asked).
func (m *monitor) collect() {
	for range 2 {
		if resp, err := http.Get(m.pprof + "heap?gc=1"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// liveHeap is what a heap profile says is live, estimated from its samples
// as pprof does.
type liveHeap struct {
	total float64 // every live object
	deadG float64 // the goroutine structs (runtime.malg): Go keeps them after their goroutine ended
}

// live reads the process's heap profile (as of the last collection) in its
// text form and scales each record's in-use bytes by the sampling rate.
func (m *monitor) live() liveHeap {
	var h liveHeap
	resp, err := http.Get(m.pprof + "heap?debug=1")
	if err != nil {
		return h
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	rate := 512.0 * 1024
	var objects, bytes float64
	inRecord, malg := false, false
	flush := func() {
		if inRecord && objects > 0 {
			// runtime/pprof's scaleHeapSample: a record of objects of the
			// average size stands for 1/(1-exp(-size/rate)) times as many.
			avg := bytes / objects
			scaled := bytes / (1 - math.Exp(-avg/rate))
			h.total += scaled
			if malg {
				h.deadG += scaled
			}
		}
		inRecord, malg = false, false
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "heap profile:"):
			if _, r, ok := strings.Cut(line, "@ heap/"); ok {
				if v, err := strconv.ParseFloat(strings.TrimSpace(r), 64); err == nil && v > 0 {
					rate = v / 2 // the header gives twice the rate
				}
			}
		case strings.Contains(line, ": ") && strings.Contains(line, "] @"):
			flush()
			var o, b, ao, ab float64
			if _, err := fmt.Sscanf(line, "%g: %g [%g: %g]", &o, &b, &ao, &ab); err == nil {
				objects, bytes, inRecord = o, b, true
			}
		case strings.HasPrefix(line, "#") && strings.Contains(line, "runtime.malg+"):
			malg = true
		case line == "":
			flush()
		}
	}
	flush()
	return h
}

// profile saves a heap profile of the gatehouse process in file.
func (m *monitor) profile(file string) { m.profileTo(file, "heap") }

// profileTo saves the gatehouse process's profile kind in file.
func (m *monitor) profileTo(file, kind string) {
	resp, err := http.Get(m.pprof + kind)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: heap profile:", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(file, b, 0o600)
}

type sample struct {
	rss, heap, live              float64 // live: the heap's objects (HeapAlloc; after a collection, only live ones)
	goroutines                   int
	sessions, relayed, delivered float64
}

// rss is the gatehouse process's resident set, in bytes.
func (m *monitor) rss() float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(m.pid) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// metricsEach calls f with each sample of the process's metrics.
func (m *monitor) metricsEach(f func(name string, v float64)) {
	resp, err := http.Get(m.metrics)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(val), 64)
		f(name, v)
	}
}

// counter is the value of the metric name (without labels).
func (m *monitor) counter(name string) float64 {
	var got float64
	m.metricsEach(func(n string, v float64) {
		if n == name {
			got = v
		}
	})
	return got
}

func (m *monitor) sample() sample {
	s := sample{rss: m.rss()}
	m.metricsEach(func(name string, v float64) {
		switch {
		case name == "go_memstats_heap_inuse_bytes":
			s.heap = v
		case name == "go_memstats_heap_alloc_bytes":
			s.live = v
		case name == "go_goroutines":
			s.goroutines = int(v)
		case strings.HasPrefix(name, "gatehouse_ws_sessions{"):
			s.sessions += v
		case strings.HasPrefix(name, "gatehouse_ws_messages_relayed_total{"):
			s.relayed += v
		case name == "gatehouse_ws_messages_delivered_total":
			s.delivered = v
		}
	})
	return s
}

func mib(b float64) string { return fmt.Sprintf("%7.1f MiB", b/(1<<20)) }
