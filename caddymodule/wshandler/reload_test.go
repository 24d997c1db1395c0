package wshandler

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/gorilla/websocket"
)

// pushBackend is a Zenith backend for the reload tests: it answers a Sub
// with a snapshot, and push sends a message to every leg open.
type pushBackend struct {
	srv     *httptest.Server
	mu      sync.Mutex
	legs    map[*websocket.Conn]bool
	upgrade int // legs opened
}

func newPushBackend(t *testing.T) *pushBackend {
	b := &pushBackend{legs: map[*websocket.Conn]bool{}}
	up := websocket.Upgrader{Subprotocols: []string{"ServiceJson"}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		b.mu.Lock()
		b.legs[c] = true
		b.upgrade++
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			delete(b.legs, c)
			b.mu.Unlock()
			c.Close()
		}()
		for {
			_, p, err := c.ReadMessage()
			if err != nil {
				return
			}
			if m := string(p); strings.Contains(m, `"Action":"Sub"`) {
				b.send(c, strings.Replace(m, `"Action":"Sub"`, `"Action":"Publish"`, 1))
			}
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *pushBackend) send(c *websocket.Conn, m string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = c.WriteMessage(websocket.TextMessage, []byte(m))
}

// push sends m on every leg.
func (b *pushBackend) push(m string) {
	b.mu.Lock()
	legs := make([]*websocket.Conn, 0, len(b.legs))
	for c := range b.legs {
		legs = append(legs, c)
	}
	b.mu.Unlock()
	for _, c := range legs {
		b.send(c, m)
	}
}

func (b *pushBackend) upgrades() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.upgrade
}

func (b *pushBackend) addr() string { return strings.TrimPrefix(b.srv.URL, "http://") }

// reloadSite is an in-process Caddy on loopback with a gateway on /ws,
// loaded again with load.
type reloadSite struct {
	t     *testing.T
	port  int
	db    string
	loads int
}

func startReloadSite(t *testing.T, upstream, ws string) *reloadSite {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	s := &reloadSite{t: t, port: freeUDPAndTCPPort(t), db: filepath.Join(t.TempDir(), "gatehouse.db")}
	s.load(upstream, ws)
	t.Cleanup(func() { caddy.Stop() })
	return s
}

// load loads the site with the gateway's upstream and subdirectives ws;
// each load differs (a route of its own), as Caddy skips a config it runs
// already.
func (s *reloadSite) load(upstream, ws string) {
	s.t.Helper()
	s.loads++
	base := fmt.Sprintf("http://127.0.0.1:%d", s.port)
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	log {
		level ERROR
	}
	gatehouse {
		issuer %[1]s
		store sqlite %[2]s
		client demo-service {
			secret_sha256 %[3]s
			grant_types client_credentials
			scopes Service/Market Service/News
		}
	}
}

%[1]s {
	gatehouse_identity
	handle /ws {
		gatehouse_ws {
			upstream ws://%[4]s/
			recheck_interval 1h
			%[5]s
		}
	}
	handle /load-%[6]d {
		respond "%[6]d"
	}
}
`, base, s.db, demoSecretSHA256, upstream, ws, s.loads)
	cfgJSON, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
	if err != nil {
		s.t.Fatalf("adapting the Caddyfile: %v\n%s", err, caddyfile)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		s.t.Fatalf("loading config %d: %v", s.loads, err)
	}
}

func (s *reloadSite) base() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// token gets an access token of demo-service.
func (s *reloadSite) token() string {
	s.t.Helper()
	status, body := s.post("/connect/token", url.Values{"grant_type": {"client_credentials"}})
	tok, ok := strings.CutPrefix(body, `{"access_token":"`)
	if status != http.StatusOK || !ok {
		s.t.Fatalf("token endpoint: %d: %s", status, body)
	}
	return tok[:strings.IndexByte(tok, '"')]
}

func (s *reloadSite) post(path string, form url.Values) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base()+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("demo-service", "demo-secret")
	// A fresh connection each time: an idle one to the config before a
	// reload may be closing.
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dial opens a socket authenticated with tok.
func (s *reloadSite) dial(tok string) *websocket.Conn {
	s.t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/ws", s.port), http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		s.t.Fatalf("dial: %v (%d)", err, status)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

func sub(controller, topic string, tid int) string {
	return fmt.Sprintf(`{"Controller":%q,"Topic":%q,"Action":"Sub","TransactionID":%d}`, controller, topic, tid)
}

func publish(controller, topic string, tid int) string {
	return fmt.Sprintf(`{"Controller":%q,"Topic":%q,"Action":"Publish","TransactionID":%d}`, controller, topic, tid)
}

// next reads the next message, within 5 s.
func next(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, p, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(p)
}

func subscribeTo(t *testing.T, c *websocket.Conn, controller, topic string, tid int) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(sub(controller, topic, tid))); err != nil {
		t.Fatal(err)
	}
	if got, want := next(t, c), publish(controller, topic, tid); got != want {
		t.Fatalf("Sub %s/%s: %s, want %s", controller, topic, got, want)
	}
}

// goroutinesSettled is the goroutine count once it has stopped falling
// (5 s at most).
func goroutinesSettled() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

// heapSettled is the heap after collections: in use (the spans holding
// objects) and live (the objects themselves), the least of a few samples,
// since what a collection leaves of the sync.Pools and of the objects of
// goroutines still ending varies from one to the next.
func heapSettled() (inuse, live uint64) {
	for i := range 5 {
		runtime.GC()
		runtime.GC() // the second empties the pools' victim caches
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if i == 0 || m.HeapInuse < inuse {
			inuse = m.HeapInuse
		}
		if i == 0 || m.HeapAlloc < live {
			live = m.HeapAlloc
		}
		time.Sleep(100 * time.Millisecond)
	}
	return inuse, live
}
