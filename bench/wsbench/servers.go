//go:build linux

package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The benchmark's OAuth client and the scope its token carries: the
// policy's default table allows every Market topic to Service/Market.
const (
	benchClient = "bench-service"
	marketScope = "Service/Market"
)

// Paths of the gateway's routes: compression off (the figures), on (the
// cost of permessage-deflate), and on with backend_compression (the
// backend's compressed messages passed through).
const (
	wsPath  = "/ws"
	wszPath = "/wsz"
	wspPath = "/wsp"
)

// binaries are the programs wsbench builds once per run.
type binaries struct {
	gatehouse, backend string
}

// build builds cmd/gatehouse and the backend into dir/bin, from the module
// root; the go command's output goes to dir/build.log.
func build(dir string) (binaries, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("finding the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return binaries{}, errors.New("run wsbench from inside the gatehouse module (go run ./bench/wsbench)")
	}
	root := filepath.Dir(gomod)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return binaries{}, err
	}
	b := binaries{gatehouse: filepath.Join(bin, "gatehouse"), backend: filepath.Join(bin, "backend")}
	logPath := filepath.Join(dir, "build.log")
	log, err := os.Create(logPath)
	if err != nil {
		return b, err
	}
	defer log.Close()
	for _, t := range []struct{ out, pkg string }{{b.gatehouse, "./cmd/gatehouse"}, {b.backend, "./bench/wsbench/backend"}} {
		cmd := exec.Command("go", "build", "-o", t.out, t.pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
		if err := cmd.Run(); err != nil {
			return b, fmt.Errorf("go build %s: %w\n%s", t.pkg, err, tail(logPath))
		}
	}
	return b, nil
}

// backend is a running backend process.
type backend struct {
	*proc
	port int
}

func (b *backend) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", b.port, path) }

// startBackend starts the backend on a port of its own, in dir/name.
func startBackend(dir, name string, bins binaries) (*backend, error) {
	port, err := reservePort()
	if err != nil {
		return nil, err
	}
	pdir, err := procDir(dir, name)
	if err != nil {
		return nil, err
	}
	b := &backend{port: port}
	b.proc, err = startProc(name, pdir, bins.backend, []string{"-listen", fmt.Sprintf("127.0.0.1:%d", port)},
		[]int{port}, func() error { _, err := httpGet(b.url("/bench/conns")); return err })
	if err != nil {
		return nil, err
	}
	return b, nil
}

// openConns is the backend's count of open WebSocket connections.
func (b *backend) openConns() (int, error) {
	body, err := httpGet(b.url("/bench/conns"))
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscan(string(body), &n)
	return n, err
}

// proxy is a running gatehouse binary: the gateway, or plain Caddy
// reverse_proxy.
type proxy struct {
	*proc
	port, admin int
	secret      string // the bench client's secret (gateway only)
}

func (p *proxy) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path) }

// startGateway starts gatehouse with the gatehouse app (an issuer, the
// bench client) and gatehouse_ws in front of the backend: on wsPath with
// compression off, and, when withCompression, on wszPath with it on and
// on wspPath with it on and backend_compression (the backend then
// compresses every message, and the gateway passes them on). The
// message-rate limit is raised out of the way (the default is 50/s per
// session). A non-empty auditLog turns the audit on, its chain written to
// that file as docs/audit.md has it (JSON, kept out of the default log).
func startGateway(dir, name string, bins binaries, be *backend, withCompression bool, auditLog string) (*proxy, error) {
	p, err := newProxy()
	if err != nil {
		return nil, err
	}
	p.secret = randomHex(32)
	sum := sha256.Sum256([]byte(p.secret))
	route := func(path string, compression, fromBackend bool) string {
		c := "" // permessage-deflate on: the default
		if !compression {
			c = "\n\t\tcompression off"
		}
		if fromBackend {
			c += "\n\t\tbackend_compression"
		}
		return fmt.Sprintf(`
	gatehouse_ws %s {
		upstream ws://127.0.0.1:%d/%s
		limits {
			messages_per_second 1000000000
			burst 1000000000
			sessions 1000000
		}
	}
`, path, be.port, c)
	}
	routes := route(wsPath, false, false)
	if withCompression {
		routes += route(wszPath, true, false) + route(wspPath, true, true)
	}
	audit := ""
	if auditLog != "" {
		audit = fmt.Sprintf(`		audit
	}
	log default {
		exclude gatehouse.audit.chain
	}
	log audit {
		output file %s
		format json
		include gatehouse.audit.chain
`, auditLog)
	}
	config := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	gatehouse {
		issuer http://127.0.0.1:%d
		client %s {
			secret_sha256 %s
			grant_types client_credentials
			scopes %s
		}
%s	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	gatehouse_identity
%s}
`, p.admin, p.port, benchClient, hex.EncodeToString(sum[:]), marketScope, audit, p.port, routes)
	return p, p.start(dir, name, bins, config, "/.well-known/openid-configuration")
}

// startReverseProxy starts gatehouse serving a site with nothing but
// Caddy's reverse_proxy to the backend (which proxies WebSockets).
func startReverseProxy(dir, name string, bins binaries, be *backend) (*proxy, error) {
	p, err := newProxy()
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	reverse_proxy 127.0.0.1:%d
}
`, p.admin, p.port, be.port)
	// Ready when a request passes through to the backend.
	return p, p.start(dir, name, bins, config, "/bench/conns")
}

func newProxy() (*proxy, error) {
	port, err := reservePort()
	if err != nil {
		return nil, err
	}
	admin, err := reservePort()
	if err != nil {
		return nil, err
	}
	return &proxy{port: port, admin: admin}, nil
}

// start writes config to dir/name/Caddyfile and runs it; the proxy is
// ready when readyPath answers 200.
func (p *proxy) start(dir, name string, bins binaries, config, readyPath string) error {
	pdir, err := procDir(dir, name)
	if err != nil {
		return err
	}
	cf := filepath.Join(pdir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(config), 0o600); err != nil {
		return err
	}
	p.proc, err = startProc(name, pdir, bins.gatehouse, []string{"run", "--config", cf, "--adapter", "caddyfile"},
		[]int{p.port, p.admin}, func() error { _, err := httpGet(p.url(readyPath)); return err })
	return err
}

// token gets an access token for the bench client (client_credentials,
// Service/Market).
func (p *proxy) token() (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {marketScope}}
	req, err := http.NewRequest(http.MethodPost, p.url("/connect/token"), strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(benchClient, p.secret) // both URL-safe: no form-encoding needed
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("token request: HTTP %d: %.200s", resp.StatusCode, body)
	}
	return tr.AccessToken, nil
}

// profile fetches, over the same seconds, a CPU profile and an
// allocation profile (a delta) of the proxy from its admin endpoint into
// prefix.pprof and prefix.allocs.pprof.
func (p *proxy) profile(prefix string, seconds int) error {
	errs := make(chan error, 2)
	for _, kind := range []struct{ name, file string }{{"profile", prefix + ".pprof"}, {"allocs", prefix + ".allocs.pprof"}} {
		go func() {
			errs <- fetchProfile(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s?seconds=%d", p.admin, kind.name, seconds),
				kind.file, seconds)
		}()
	}
	return errors.Join(<-errs, <-errs)
}

func fetchProfile(u, path string, seconds int) error {
	resp, err := (&http.Client{Timeout: time.Duration(seconds+30) * time.Second}).Get(u)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: HTTP %d", u, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// httpClient makes the benchmark's plain HTTP requests (readiness, the
// token, the backend's window and stats).
var httpClient = &http.Client{Timeout: 10 * time.Second}

// httpGet returns the body of a 200 answer to GET u.
func httpGet(u string) ([]byte, error) {
	resp, err := httpClient.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return body, nil
}

func procDir(dir, name string) (string, error) {
	d := filepath.Join(dir, name)
	return d, os.MkdirAll(d, 0o700)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
