package caddymodule

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	// reverse_proxy, headers, metrics and the rest, as in cmd/gatehouse.
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// demoSecretSHA256 is the SHA-256 of "demo-secret", the demo-service's
// secret (DEMO-ONLY).
const demoSecretSHA256 = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"

// testGlobalOptions are the global options of the in-process Caddy of
// tests: no admin endpoint, nothing persisted, plain HTTP, quiet logs.
const testGlobalOptions = `
	admin off
	persist_config off
	auto_https off
	log {
		level ERROR
	}
`

// loadCaddyfile adapts a Caddyfile and runs it in-process until the test
// ends. The data and config directories are the test's own.
func loadCaddyfile(t *testing.T, caddyfile string) error {
	t.Helper()
	cfgJSON, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		t.Fatalf("adapting the Caddyfile: %v\n%s", err, caddyfile)
	}
	for _, w := range warnings {
		t.Logf("adapt warning: %s", w)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		return err
	}
	t.Cleanup(func() { caddy.Stop() })
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testClient opens a connection per request: a reload closes the idle
// connections of the old server, and a POST is not retried on one.
var testClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := testClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// postForm posts form to u, with Basic authentication when basic is
// "user:password".
func postForm(t *testing.T, u, basic string, form url.Values) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user, pass, ok := strings.Cut(basic, ":"); ok {
		req.SetBasicAuth(user, pass)
	}
	resp, err := testClient.Do(req)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		// Right after a reload, a connection the old server accepted as it
		// stopped can close before any request is read (EOF), or be reset
		// with its listener while still in its backlog (Caddy listens with
		// SO_REUSEPORT, so the kernel may queue it at either server):
		// nothing reached a handler, so sending it again is safe.
		req.Body, _ = req.GetBody()
		resp, err = testClient.Do(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// echoUpstream is a backend that answers with the request headers it got,
// as JSON, and counts its requests.
type echoUpstream struct {
	*httptest.Server
	hits atomic.Int64
}

func newEchoUpstream(t *testing.T) *echoUpstream {
	u := new(echoUpstream)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
	}))
	t.Cleanup(u.Close)
	return u
}

// dial is the upstream's host:port for reverse_proxy.
func (u *echoUpstream) dial() string { return strings.TrimPrefix(u.URL, "http://") }

// response is a response read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request sends a request with the headers (name -> values) and reads the
// response.
func request(t *testing.T, method, u string, header http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range header {
		req.Header[name] = values // as given: no canonicalization
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, body}
}

// upstreamHeaders decodes the headers an echoUpstream answered with.
func upstreamHeaders(t *testing.T, r response) http.Header {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var h http.Header
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("upstream answer %q: %v", r.body, err)
	}
	return h
}

// metricValue returns the value of the sample `name{labels}` (labels as
// Prometheus prints them, sorted) in a text exposition, or -1.
func metricValue(exposition, sample string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	m := re.FindStringSubmatch(exposition)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}
