package integration

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The processes the tests run: the gatehouse binary (built once by
// TestMain) and its CLI. Each gatehouse has its own
// ports (harness_ports_test.go) and data directory, so tests run in
// parallel; its log is checked for secrets when the test ends
// (harness_leaks_test.go).

// Bounds of every wait in this package. They are generous, for a loaded
// machine running the tests in parallel: each is a limit, not a delay.
const (
	startTimeout      = 90 * time.Second       // until the readiness probe answers
	probeTimeout      = 5 * time.Second        // one readiness probe
	readyPollInterval = 100 * time.Millisecond // between readiness probes
	stopTimeout       = 30 * time.Second       // SIGTERM to exit, then SIGKILL
	requestTimeout    = 30 * time.Second       // one HTTP exchange
	reloadTimeout     = 60 * time.Second       // `gatehouse reload`
	cliTimeout        = 60 * time.Second       // one `gatehouse keys` command
	rotateTimeout     = 30 * time.Second       // until the issuer publishes a rotated key
	// refetchTimeout is how long the guard may take to accept a token of a
	// new key: it refetches the key set on an unknown kid at most every
	// 5s (verify.DefaultJWKSMinInterval), so 30s leaves room on a busy
	// machine.
	refetchTimeout = 30 * time.Second
	pollInterval   = 200 * time.Millisecond // between polls of a gatehouse's state
	npmCITimeout   = 5 * time.Minute        // `npm ci` in node/
	nodeRunTimeout = 2 * time.Minute        // one `node --test` script
)

// startAttempts is how many times StartGatehouseWith tries new ports when
// another process takes one of them first.
const startAttempts = 3

var (
	// repoRoot is the module root: the working directory of every gatehouse
	// process, so Caddyfile.example's relative paths resolve as in the demo.
	repoRoot string
	// binary is the gatehouse binary TestMain builds.
	binary string
)

// Both are set by TestMain before any test runs and only read after.

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	repoRoot = filepath.Dir(wd)

	dir, err := os.MkdirTemp("", "gatehouse-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "gatehouse")

	began := time.Now()
	build := exec.Command("go", "build", "-o", binary, "./cmd/gatehouse")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: go build ./cmd/gatehouse: %v\n%s", err, out)
		return 1
	}
	fmt.Printf("integration: built gatehouse in %s\n", time.Since(began).Round(time.Millisecond))

	return m.Run()
}

// faultBinary builds, once, a gatehouse binary with the gatehouse_faults
// tag, whose contain.Point hooks panic where GATEHOUSE_FAULTS says; the
// default binary has none. Only the hook's package and what imports it
// are compiled again.
func faultBinary(t testing.TB) string {
	t.Helper()
	faultOnce.Do(func() {
		path := binary + "-faults"
		build := exec.Command("go", "build", "-tags", "gatehouse_faults", "-o", path, "./cmd/gatehouse")
		build.Dir = repoRoot
		out, err := build.CombinedOutput()
		if err != nil {
			faultErr = fmt.Errorf("go build -tags gatehouse_faults: %v\n%s", err, out)
			return
		}
		faultPath = path
	})
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	return faultPath
}

var (
	faultOnce sync.Once
	faultPath string
	faultErr  error
)

// Options says what StartGatehouseWith runs. The zero value is the demo.
type Options struct {
	// Config is the Caddyfile to run, absolute or relative to the module
	// root; it may use the placeholders that Env sets. Default demoConfig,
	// Caddyfile.example.
	Config string
	// ReadyPath is requested until it answers ReadyStatus: the process is
	// then serving. Default the discovery document, 200.
	ReadyPath   string
	ReadyStatus int
	// Issuer is the issuer URL the process gets in GATEHOUSE_ISSUER, for a
	// config that uses it: processes sharing one store must share one
	// issuer, the URL a load balancer would answer on. Default the
	// process's own URL. When it is another's, g.Client sends the requests
	// addressed to it to this process, as a load balancer could route
	// them.
	Issuer string
	// Env adds variables (NAME=value) to the process's environment and
	// its CLI's, e.g. a store's DSN.
	Env []string
	// Binary is the gatehouse binary to run. Default the one TestMain
	// built; faultBinary gives one that can inject panics.
	Binary string
}

// Gatehouse is one gatehouse process (and its restarts) serving a
// Caddyfile (Caddyfile.example unless told otherwise) on loopback, with
// its own ports and data directory.
type Gatehouse struct {
	t    testing.TB
	opts Options

	DataDir     string // XDG_DATA_HOME and HOME; survives restarts
	Port        int    // HTTP port
	Admin       string // admin endpoint, host:port
	AdminPort   int    // the port of Admin
	BackendPort int    // GATEHOUSE_BACKEND_PORT, for the demo backend
	URL         string // http://localhost:<Port>
	Issuer      string // Options.Issuer, by default URL
	LogPath     string // stdout and stderr of every run, appended

	// Client is the HTTP client tests use; it records every token it sees
	// in a response so that CheckLogs can look for them.
	Client *http.Client

	mu      sync.Mutex
	secrets []string     // strings the log must never contain
	peers   []*Gatehouse // other processes whose secrets this log must not hold either
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
}

// StartGatehouse starts gatehouse with Caddyfile.example and stops it when
// the test ends, then checks that its log holds no secret or token.
func StartGatehouse(t testing.TB) *Gatehouse {
	t.Helper()
	return StartGatehouseWith(t, Options{})
}

// StartGatehouseWith is StartGatehouse with another config or readiness
// probe. When another process takes one of the new ports first, it starts
// again on other ports, with a fresh data directory.
func StartGatehouseWith(t testing.TB, opts Options) *Gatehouse {
	t.Helper()
	if opts.Config == "" {
		opts.Config = demoConfig
	}
	if opts.ReadyPath == "" {
		opts.ReadyPath = "/.well-known/openid-configuration"
	}
	if opts.ReadyStatus == 0 {
		opts.ReadyStatus = http.StatusOK
	}
	dir := t.TempDir()
	g := &Gatehouse{
		t:       t,
		opts:    opts,
		LogPath: filepath.Join(dir, "gatehouse.log"),
	}
	g.Client = &http.Client{
		Timeout:   requestTimeout,
		Transport: &recordingTransport{base: &routingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), g: g}, g: g},
	}
	// DEMO-ONLY secrets of Caddyfile.example: never in a log, in any form.
	g.AddSecret("demo-secret", basicCredentials("demo-service", "demo-secret"),
		deskSecret, basicCredentials(deskClient, deskSecret), traderTOTPSecret)

	t.Cleanup(func() {
		g.Stop()
		g.CheckLogs(t)
	})
	for attempt := 1; ; attempt++ {
		var err error
		if g.DataDir, err = os.MkdirTemp(dir, "data-"); err != nil {
			t.Fatal(err)
		}
		g.Port, g.AdminPort, g.BackendPort = reservePort(t), reservePort(t), reservePort(t)
		g.Admin = "127.0.0.1:" + strconv.Itoa(g.AdminPort)
		g.URL = "http://localhost:" + strconv.Itoa(g.Port)
		g.Issuer = cmp.Or(opts.Issuer, g.URL)
		err = g.start()
		if err == nil {
			return g
		}
		if !errors.Is(err, errPortBusy) || attempt == startAttempts {
			t.Fatalf("starting gatehouse (attempt %d of %d): %v", attempt, startAttempts, err)
		}
		t.Logf("starting gatehouse (attempt %d of %d): %v; trying other ports", attempt, startAttempts, err)
	}
}

// Env is the environment of gatehouse processes: Caddyfile.example's
// placeholders and a private data directory.
func (g *Gatehouse) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "GATEHOUSE_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env,
		"HOME="+g.DataDir,
		"XDG_DATA_HOME="+g.DataDir,
		"XDG_CONFIG_HOME="+filepath.Join(g.DataDir, "config"),
		"GATEHOUSE_HTTP_PORT="+strconv.Itoa(g.Port),
		"GATEHOUSE_ADMIN="+g.Admin,
		"GATEHOUSE_BACKEND_PORT="+strconv.Itoa(g.BackendPort),
		"GATEHOUSE_BIND=127.0.0.1",
		"GATEHOUSE_ISSUER="+g.Issuer,
		"GATEHOUSE_AUDIT_LOG="+g.AuditLog(),
	), g.opts.Env...)
}

// AuditLog is the file the demo's audit chain goes to: in g's data
// directory, so that every process has its own.
func (g *Gatehouse) AuditLog() string { return filepath.Join(g.DataDir, "audit.log") }

// routingTransport sends a request addressed to g's issuer, when that is
// another process's URL, to g's own address instead: what a load balancer
// in front of several processes does when it picks g.
type routingTransport struct {
	base http.RoundTripper
	g    *Gatehouse
}

func (rt *routingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.g.Issuer != rt.g.URL {
		issuer, _ := url.Parse(rt.g.Issuer)
		own, _ := url.Parse(rt.g.URL)
		if issuer != nil && own != nil && req.URL.Host == issuer.Host {
			req = req.Clone(req.Context())
			req.URL.Host, req.Host = own.Host, own.Host
		}
	}
	return rt.base.RoundTrip(req)
}

// ports are the ports of g's process.
func (g *Gatehouse) ports() []int {
	return []int{g.Port, g.AdminPort, g.BackendPort}
}

// Start runs `gatehouse run --config <config>` on g's ports and data
// directory and waits until the readiness probe (by default the discovery
// document) answers.
func (g *Gatehouse) Start() {
	g.t.Helper()
	if err := g.start(); err != nil {
		g.t.Fatal(err)
	}
}

// start is Start returning its error; the error wraps errPortBusy when
// another process holds or took one of g's ports.
func (g *Gatehouse) start() error {
	g.mu.Lock()
	running := g.cmd != nil
	g.mu.Unlock()
	if running {
		return errors.New("gatehouse is already running")
	}
	// Caddy listens with SO_REUSEPORT: on a port another Caddy holds it
	// would start without error and share the port.
	if err := checkPortsFree(g.ports()...); err != nil {
		return err
	}

	logFile, err := os.OpenFile(g.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	logStart, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		logFile.Close()
		return err
	}
	fmt.Fprintf(logFile, "=== integration: starting gatehouse at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(cmp.Or(g.opts.Binary, binary), "run", "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting gatehouse: %w", err)
	}
	exited := make(chan struct{})
	g.mu.Lock()
	g.cmd, g.exited, g.waitErr = cmd, exited, nil
	g.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		g.mu.Lock()
		g.waitErr = err
		g.mu.Unlock()
		close(exited)
	}()

	deadline := time.Now().Add(startTimeout)
	probe := &http.Client{Timeout: probeTimeout}
	for {
		resp, err := probe.Get(g.URL + g.opts.ReadyPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == g.opts.ReadyStatus {
				break
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-exited:
			g.mu.Lock()
			werr := g.waitErr
			g.cmd = nil
			g.mu.Unlock()
			for line := range strings.Lines(g.logsFrom(logStart)) {
				if strings.Contains(line, "address already in use") {
					return fmt.Errorf("%w: gatehouse exited (%v): %s", errPortBusy, werr, strings.TrimSpace(line))
				}
			}
			return fmt.Errorf("gatehouse exited before %s answered (%v); its log:\n%s", g.opts.ReadyPath, werr, g.Logs())
		case <-time.After(readyPollInterval):
		}
		if time.Now().After(deadline) {
			_ = g.stop()
			return fmt.Errorf("%s did not answer %d within %s (last: %v); gatehouse log:\n%s", g.opts.ReadyPath, g.opts.ReadyStatus, startTimeout, err, g.Logs())
		}
	}

	// The probe may have reached another process that listens on the port
	// too: every listener on g's ports must be this process's.
	if err := checkPortsOwned(cmd.Process.Pid, g.ports()...); err != nil {
		if serr := g.stop(); serr != nil {
			return fmt.Errorf("%w (and stopping it: %v)", err, serr)
		}
		return err
	}
	return nil
}

// Kill ends the process at once (SIGKILL), as a crash would, and waits
// for it.
func (g *Gatehouse) Kill() {
	g.t.Helper()
	g.mu.Lock()
	cmd, exited := g.cmd, g.exited
	g.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
	g.mu.Lock()
	g.cmd = nil
	g.mu.Unlock()
}

// Running reports whether the process is running.
func (g *Gatehouse) Running() bool {
	g.mu.Lock()
	exited := g.exited
	g.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Stop ends the process gracefully: SIGTERM, a bounded wait, then SIGKILL.
// It does nothing when the process is not running.
func (g *Gatehouse) Stop() {
	g.t.Helper()
	if err := g.stop(); err != nil {
		g.t.Error(err)
	}
}

// stop is Stop returning what went wrong. It signals g's own process only,
// by its pid.
func (g *Gatehouse) stop() error {
	g.mu.Lock()
	cmd, exited := g.cmd, g.exited
	g.cmd = nil
	g.mu.Unlock()
	if cmd == nil {
		return nil
	}
	g.Client.CloseIdleConnections()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("gatehouse (pid %d) did not exit within %s of SIGTERM; killed it", cmd.Process.Pid, stopTimeout)
	}
	g.mu.Lock()
	err := g.waitErr
	g.mu.Unlock()
	if err != nil {
		return fmt.Errorf("gatehouse (pid %d) exited with %v after SIGTERM; its log:\n%s", cmd.Process.Pid, err, g.Logs())
	}
	return nil
}

// Restart stops the process and starts a new one on the same ports and data
// directory.
func (g *Gatehouse) Restart() {
	g.t.Helper()
	g.Stop()
	g.Start()
}

// Reload runs `gatehouse reload` with config against the running process.
func (g *Gatehouse) Reload(config string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cmp.Or(g.opts.Binary, binary), "reload", "--config", config, "--address", g.Admin, "--force")
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("gatehouse reload: %v\n%s\ngatehouse log:\n%s", err, out, g.Logs())
	}
}

// rotateKeys runs `gatehouse keys rotate --immediately` on g's config and
// store, as an operator would.
func rotateKeys(t testing.TB, g *Gatehouse) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "keys", "rotate", "--immediately", "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse keys rotate --immediately: %v\n%s", err, out)
	}
	t.Logf("gatehouse keys rotate --immediately:\n%s", bytes.TrimSpace(out))
}

// runCLI runs `gatehouse <args> --config <g's config>` with g's
// environment (its store), as an operator would while g runs, and
// returns its output.
func runCLI(t testing.TB, g *Gatehouse, args ...string) string {
	t.Helper()
	return runCLIWith(t, g, nil, args...)
}

// runCLIInput is runCLI with input and a newline on the command's standard
// input (a password, as an operator types it).
func runCLIInput(t testing.TB, g *Gatehouse, input string, args ...string) {
	t.Helper()
	runCLIWith(t, g, strings.NewReader(input+"\n"), args...)
}

func runCLIWith(t testing.TB, g *Gatehouse, stdin io.Reader, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--config", g.opts.Config)...)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("gatehouse %s:\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
	return string(out)
}

// Logs returns everything the processes have written so far.
func (g *Gatehouse) Logs() string {
	return g.logsFrom(0)
}

// logsFrom returns what the processes have written from offset on.
func (g *Gatehouse) logsFrom(offset int64) string {
	b, err := os.ReadFile(g.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", g.LogPath, err)
	}
	return string(b[min(offset, int64(len(b))):])
}
