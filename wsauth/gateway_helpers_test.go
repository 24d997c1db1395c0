package wsauth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// Tokens the fake verifier knows.
const (
	tokDemo   = "demo-token"   // Service/Market, Service/News
	tokTrader = "trader-token" // also Service/Trading, Service/OrderPad
	tokFault  = "fault-token"  // the verifier's own failure
	tokHang   = "hang-token"   // the verifier hangs until its context ends
)

var testExpiry = time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)
var testNow = testExpiry.Add(-time.Hour)

// fakeVerifier knows the tokens above and made-up ones,
// "id|<subject>|<scope>,<scope>|<expiry as an offset from testExpiry>[|…]"
// (client demo-app), where an extra "ent=ASX:quotes+NZX:quotes" gives the
// identity's entitlements; refuse makes it refuse a token from then on,
// narrowTo answer a token with other entitlements (as the Caddy glue
// answers a live socket's token after its user lost some).
type fakeVerifier struct {
	calls    atomic.Int64
	mu       sync.Mutex
	refused  map[string]error       // token -> the refusal or fault
	narrowed map[string]entitle.Set // token -> the entitlements it now has
}

// narrowTo makes the verifier answer token with the entitlements ent.
func (v *fakeVerifier) narrowTo(token string, ent entitle.Set) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.narrowed == nil {
		v.narrowed = map[string]entitle.Set{}
	}
	v.narrowed[token] = ent
}

// refuse makes the verifier answer err for token (a *Refusal, or a fault).
func (v *fakeVerifier) refuse(token string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.refused == nil {
		v.refused = map[string]error{}
	}
	v.refused[token] = err
}

// madeUpToken is a token the fake verifier accepts for subject with
// scopes, expiring at testExpiry+offset; extra makes it distinct.
func madeUpToken(subject string, scopes []string, offset time.Duration, extra ...string) string {
	return strings.Join(append([]string{"id", subject, strings.Join(scopes, ","), offset.String()}, extra...), "|")
}

func (v *fakeVerifier) VerifyAccessToken(ctx context.Context, token string) (Identity, error) {
	v.calls.Add(1)
	v.mu.Lock()
	err := v.refused[token]
	ent, narrowed := v.narrowed[token]
	v.mu.Unlock()
	if err != nil {
		return Identity{}, err
	}
	if f := strings.Split(token, "|"); len(f) >= 4 && f[0] == "id" {
		offset, err := time.ParseDuration(f[3])
		if err != nil {
			return Identity{}, &Refusal{Reason: "malformed"}
		}
		var scopes []string
		if f[2] != "" {
			scopes = strings.Split(f[2], ",")
		}
		for _, x := range f[4:] {
			if pairs, ok := strings.CutPrefix(x, "ent="); ok && !narrowed {
				ent = entitle.MustParse(strings.ReplaceAll(pairs, "+", " "))
			}
		}
		return Identity{Subject: f[1], ClientID: "demo-app", DisplayName: f[1], Scopes: scopes, Expiry: testExpiry.Add(offset),
			Entitlements: ent}, nil
	}
	switch token {
	case tokHang:
		<-ctx.Done()
		return Identity{}, ctx.Err()
	case tokDemo:
		return Identity{Subject: "u-demo", ClientID: "demo-app", DisplayName: "Demo User",
			Scopes: []string{"openid", policy.ScopeMarket, policy.ScopeNews}, Expiry: testExpiry}, nil
	case tokTrader:
		return Identity{Subject: "u-trader", ClientID: "demo-app", DisplayName: "Trader",
			Scopes: []string{policy.ScopeMarket, policy.ScopeNews, policy.ScopeTrading, policy.ScopeOrderPad}, Expiry: testExpiry}, nil
	case tokFault:
		return Identity{}, context.DeadlineExceeded
	}
	return Identity{}, &Refusal{Reason: "bad_signature"}
}

type fakePasswords struct{}

func (fakePasswords) CheckOwner(_ context.Context, c OwnerCredentials) (Identity, error) {
	if c.Username == "trader" && c.Password == "trader" && c.ClientID == "demo-app" {
		return Identity{Subject: "u-trader", ClientID: c.ClientID, Scopes: []string{policy.ScopeTrading}, Expiry: testExpiry}, nil
	}
	return Identity{}, &Refusal{Reason: "invalid_grant"}
}

// fakeMetrics counts what the gateway reports.
type fakeMetrics struct {
	mu       sync.Mutex
	sessions map[State]int
	auth     map[string]int
	relayed  map[string]int
	denied   map[string]int
	slow     int
	deliv    int
	reauth   int
	lapsed   map[string]int
	limited  map[string]int
	subs     map[string]int
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{sessions: map[State]int{}, auth: map[string]int{}, relayed: map[string]int{}, denied: map[string]int{},
		lapsed: map[string]int{}, limited: map[string]int{}, subs: map[string]int{}}
}

func (m *fakeMetrics) Sessions(s State, d int) { m.mu.Lock(); m.sessions[s] += d; m.mu.Unlock() }
func (m *fakeMetrics) Auth(a AuthMethod, r string) {
	m.mu.Lock()
	m.auth[string(a)+"/"+r]++
	m.mu.Unlock()
}
func (m *fakeMetrics) Relayed(c string, n int) { m.mu.Lock(); m.relayed[c] += n; m.mu.Unlock() }
func (m *fakeMetrics) Denied(c string)         { m.mu.Lock(); m.denied[c]++; m.mu.Unlock() }
func (m *fakeMetrics) Delivered(n int)         { m.mu.Lock(); m.deliv += n; m.mu.Unlock() }
func (m *fakeMetrics) SlowClient()             { m.mu.Lock(); m.slow++; m.mu.Unlock() }
func (m *fakeMetrics) Reauthenticated()        { m.mu.Lock(); m.reauth++; m.mu.Unlock() }
func (m *fakeMetrics) Lapsed(r string)         { m.mu.Lock(); m.lapsed[r]++; m.mu.Unlock() }
func (m *fakeMetrics) Limited(k string)        { m.mu.Lock(); m.limited[k]++; m.mu.Unlock() }
func (m *fakeMetrics) Subscriptions(c string, d int) {
	m.mu.Lock()
	m.subs[c] += d
	m.mu.Unlock()
}
func (m *fakeMetrics) get(f func(m *fakeMetrics) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

// env is a test gateway with its backend.
type testEnv struct {
	t       testing.TB
	gw      *Gateway
	srv     *httptest.Server
	backend *fakeBackend
	metrics *fakeMetrics
	logs    *observer.ObservedLogs
	ver     *fakeVerifier
	cfg     Config // what the gateway was built with, before its defaults
}

func newTestEnv(t testing.TB, mod func(*Config)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, backend: newFakeBackend(t), metrics: newFakeMetrics(), ver: &fakeVerifier{}}
	core, logs := observer.New(zap.DebugLevel)
	e.logs = logs
	cfg := Config{
		Backend:   Backend{Upstreams: []string{e.backend.url()}},
		Transport: Transport{CloseGrace: 500 * time.Millisecond},
		Hooks: Hooks{
			Verifier: e.ver,
			Metrics:  e.metrics,
			Logger:   zap.New(core),
			Now:      func() time.Time { return testNow },
			BackendHeaders: func(h http.Header, id Identity) {
				h.Set("X-User-Id", id.Subject)
				h.Set("X-Client-Id", id.ClientID)
				h.Set("X-Scopes", strings.Join(id.Scopes, " "))
			},
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.gw, e.cfg = gw, cfg
	e.srv = httptest.NewServer(gw)
	t.Cleanup(func() {
		e.srv.Close()
		gw.Shutdown(websocket.CloseGoingAway)
	})
	return e
}

func (e *testEnv) wsURL() string {
	return "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws?version=1.1"
}

// dial opens a client socket; header is added to the upgrade.
func (e *testEnv) dial(header http.Header) *websocket.Conn {
	e.t.Helper()
	c, resp, err := e.tryDial(header, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial: %v (status %d)", err, status)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func (e *testEnv) tryDial(header http.Header, d *websocket.Dialer) (*websocket.Conn, *http.Response, error) {
	if d == nil {
		d = &websocket.Dialer{Subprotocols: []string{DefaultSubprotocol}, HandshakeTimeout: 5 * time.Second}
	}
	return d.Dial(e.wsURL(), header)
}

func (e *testEnv) sessions() int {
	e.gw.mu.Lock()
	defer e.gw.mu.Unlock()
	return len(e.gw.sessions)
}

// send writes msg and reads the next message, within 5 s.
func roundTrip(t testing.TB, c *websocket.Conn, msg string) string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	return readMsg(t, c)
}

func readMsg(t testing.TB, c *websocket.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, got, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(got)
}

// closeCode reads until the socket ends, within 5 s, and returns the close
// code (-1 for an end without a close frame).
func closeCode(t testing.TB, c *websocket.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 100_000 {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if ce, ok := err.(*websocket.CloseError); ok {
			return ce.Code
		}
		return -1
	}
	t.Fatal("socket did not end")
	return 0
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// eventually polls cond every 10 ms for up to 5 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting: %s", what)
}

func goroutines() int { return runtime.NumGoroutine() }

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
