package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of every wait in this package.
const (
	startTimeout   = 60 * time.Second // until the readiness probe answers
	stopTimeout    = 15 * time.Second // SIGTERM to exit, then SIGKILL
	requestTimeout = 30 * time.Second // one HTTP exchange
	reloadTimeout  = 60 * time.Second // `gatehouse reload`
	cliTimeout     = 60 * time.Second // one `gatehouse keys` command
	rotateTimeout  = 15 * time.Second // until the issuer publishes a rotated key
	// refetchTimeout is how long the guard may take to accept a token of a
	// new key: it refetches the key set on an unknown kid at most every
	// 5s (verify.DefaultJWKSMinInterval), so 15s leaves room.
	refetchTimeout = 15 * time.Second
	pollInterval   = 200 * time.Millisecond
)

var (
	// repoRoot is the module root: the working directory of every gatehouse
	// process, so Caddyfile.example's relative paths resolve as in the demo.
	repoRoot string
	// binary is the gatehouse binary TestMain builds.
	binary string
)

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

// Options says what StartGatehouseWith runs. The zero value is the demo.
type Options struct {
	// Config is the Caddyfile to run, absolute or relative to the module
	// root; it may use the placeholders that Env sets. Default
	// Caddyfile.example.
	Config string
	// ReadyPath is requested until it answers ReadyStatus: the process is
	// then serving. Default the discovery document, 200.
	ReadyPath   string
	ReadyStatus int
}

// Gatehouse is one gatehouse process (and its restarts) serving a
// Caddyfile (Caddyfile.example unless told otherwise) on loopback, with
// its own data directory.
type Gatehouse struct {
	t    testing.TB
	opts Options

	DataDir string // XDG_DATA_HOME and HOME; survives restarts
	Port    int    // HTTP port
	Admin   string // admin endpoint, host:port
	Issuer  string // http://localhost:<Port>
	LogPath string // stdout and stderr of every run, appended

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
// probe.
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
		DataDir: filepath.Join(dir, "data"),
		Port:    freePort(t),
		Admin:   "127.0.0.1:" + strconv.Itoa(freePort(t)),
		LogPath: filepath.Join(dir, "gatehouse.log"),
	}
	g.Issuer = "http://localhost:" + strconv.Itoa(g.Port)
	if err := os.MkdirAll(g.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	g.Client = &http.Client{
		Timeout:   requestTimeout,
		Transport: &recordingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), g: g},
	}
	// DEMO-ONLY secrets of Caddyfile.example: never in a log, in any form.
	g.AddSecret("demo-secret", basicCredentials("demo-service", "demo-secret"))

	t.Cleanup(func() {
		g.Stop()
		g.CheckLogs(t)
	})
	g.Start()
	return g
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
	return append(env,
		"HOME="+g.DataDir,
		"XDG_DATA_HOME="+g.DataDir,
		"XDG_CONFIG_HOME="+filepath.Join(g.DataDir, "config"),
		"GATEHOUSE_HTTP_PORT="+strconv.Itoa(g.Port),
		"GATEHOUSE_ADMIN="+g.Admin,
		"GATEHOUSE_BIND=127.0.0.1",
	)
}

// Start runs `gatehouse run --config <config>` and waits until the
// readiness probe (by default the discovery document) answers.
func (g *Gatehouse) Start() {
	g.t.Helper()
	g.mu.Lock()
	running := g.cmd != nil
	g.mu.Unlock()
	if running {
		g.t.Fatal("gatehouse is already running")
	}

	logFile, err := os.OpenFile(g.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		g.t.Fatal(err)
	}
	fmt.Fprintf(logFile, "=== integration: starting gatehouse at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binary, "run", "--config", g.opts.Config)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		g.t.Fatalf("starting gatehouse: %v", err)
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
	probe := &http.Client{Timeout: time.Second}
	for {
		resp, err := probe.Get(g.Issuer + g.opts.ReadyPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == g.opts.ReadyStatus {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-exited:
			g.mu.Lock()
			werr := g.waitErr
			g.cmd = nil
			g.mu.Unlock()
			g.t.Fatalf("gatehouse exited before %s answered (%v); its log:\n%s", g.opts.ReadyPath, werr, g.Logs())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.Stop()
			g.t.Fatalf("%s did not answer %d within %s (last: %v); gatehouse log:\n%s", g.opts.ReadyPath, g.opts.ReadyStatus, startTimeout, err, g.Logs())
		}
	}
}

// Stop ends the process gracefully: SIGTERM, a bounded wait, then SIGKILL.
// It does nothing when the process is not running.
func (g *Gatehouse) Stop() {
	g.t.Helper()
	g.mu.Lock()
	cmd, exited := g.cmd, g.exited
	g.cmd = nil
	g.mu.Unlock()
	if cmd == nil {
		return
	}
	g.Client.CloseIdleConnections()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-exited
		g.t.Errorf("gatehouse did not exit within %s of SIGTERM; killed it", stopTimeout)
		return
	}
	g.mu.Lock()
	err := g.waitErr
	g.mu.Unlock()
	if err != nil {
		g.t.Errorf("gatehouse exited with %v after SIGTERM; its log:\n%s", err, g.Logs())
	}
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
	cmd := exec.CommandContext(ctx, binary, "reload", "--config", config, "--address", g.Admin)
	cmd.Dir = repoRoot
	cmd.Env = g.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		g.t.Fatalf("gatehouse reload: %v\n%s\ngatehouse log:\n%s", err, out, g.Logs())
	}
}

// Logs returns everything the processes have written so far.
func (g *Gatehouse) Logs() string {
	b, err := os.ReadFile(g.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", g.LogPath, err)
	}
	return string(b)
}

// AddSecret names strings that must never appear in the log.
func (g *Gatehouse) AddSecret(secrets ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range secrets {
		if s != "" {
			g.secrets = append(g.secrets, s)
		}
	}
}

// AlsoCheckSecretsOf makes CheckLogs look for the secrets of others in g's
// log too.
func (g *Gatehouse) AlsoCheckSecretsOf(others ...*Gatehouse) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peers = append(g.peers, others...)
}

// Secrets returns the strings g's log must never contain: those of g and
// of the peers named by AlsoCheckSecretsOf.
func (g *Gatehouse) Secrets() []string {
	g.mu.Lock()
	secrets := slices.Clone(g.secrets)
	peers := slices.Clone(g.peers)
	g.mu.Unlock()
	for _, p := range peers {
		p.mu.Lock()
		secrets = append(secrets, p.secrets...)
		p.mu.Unlock()
	}
	return secrets
}

// CheckLogs fails t if the log holds a password, a client secret or a token
// that went through g.Client (or was given to AddSecret).
func (g *Gatehouse) CheckLogs(t testing.TB) {
	t.Helper()
	secrets := g.Secrets()
	logs, err := os.ReadFile(g.LogPath)
	if err != nil {
		t.Fatalf("reading the gatehouse log: %v", err)
	}
	if !bytes.Contains(logs, []byte("=== integration: starting gatehouse")) {
		t.Fatalf("the gatehouse log %s was not captured", g.LogPath)
	}
	for _, leak := range findLeaks(logs, secrets, demoPasswords) {
		t.Errorf("the gatehouse log leaks %s", leak)
	}
}

// recordingTransport passes requests on and records the tokens of every
// JSON response, so that CheckLogs can look for them.
type recordingTransport struct {
	base http.RoundTripper
	g    *Gatehouse
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the response to %s %s: %w", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var fields map[string]any
	if json.Unmarshal(body, &fields) == nil {
		for _, name := range []string{"access_token", "refresh_token", "id_token"} {
			if s, ok := fields[name].(string); ok {
				rt.g.AddSecret(s)
			}
		}
	}
	return resp, nil
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rotateKeys runs `gatehouse keys rotate --immediately` on a's config and
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

// upstream is the backend behind B: it records the requests it gets.
type upstream struct {
	URL string

	mu   sync.Mutex
	reqs []http.Header
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	up := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		up.reqs = append(up.reqs, r.Header.Clone())
		up.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "upstream ok")
	}))
	t.Cleanup(srv.Close)
	up.URL = srv.URL
	return up
}

// received returns how many requests reached the upstream and the headers
// of the last one.
func (up *upstream) received() (int, http.Header) {
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.reqs) == 0 {
		return 0, nil
	}
	return len(up.reqs), up.reqs[len(up.reqs)-1]
}
