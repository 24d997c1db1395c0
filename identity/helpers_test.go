package identity

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/users"
)

const testIssuer = "http://issuer.test"

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func sha(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// testConfig is the demo contract in small: a public app, a confidential
// service, two users.
func testConfig(now func() time.Time) Config {
	return Config{
		Issuer: testIssuer,
		Now:    now,
		APIResources: []clients.APIResource{
			{Name: "gatehouse", SecretHashes: [][]byte{sha("api-secret")}},
			{Name: "other-api", SecretHashes: [][]byte{sha("other-secret")}},
		},
		Clients: []clients.Config{
			{
				ID: "app", Public: true,
				GrantTypes:     []string{oauth.GrantPassword, oauth.GrantRefreshToken},
				Scopes:         []string{"openid", "profile", "email", "offline_access", "Service/Market", "Service/News", "Service/Trading"},
				AllowedOrigins: []string{"http://localhost:3000"},
			},
			{
				ID: "svc", SecretHashes: [][]byte{sha("svc-secret")},
				GrantTypes:    []string{oauth.GrantClientCredentials},
				Introspect:    true,
				Scopes:        []string{"Service/Market", "Service/News"},
				DefaultScopes: []string{"Service/Market"},
			},
			{
				ID: "conf", SecretHashes: [][]byte{sha("conf-secret")},
				GrantTypes: []string{oauth.GrantPassword, oauth.GrantRefreshToken},
				Scopes:     []string{"openid", "offline_access", "Service/Market"},
			},
			{
				ID: "app2", Public: true,
				GrantTypes: []string{oauth.GrantPassword, oauth.GrantRefreshToken},
				Scopes:     []string{"offline_access", "Service/Market"},
			},
		},
	}
}

// fixture is a server on a real SQLite file with its seeded users.
type fixture struct {
	t     testing.TB
	srv   *Server
	st    store.Store
	clock *clock
	cfg   Config
	// sleep is the throttle's sleeper; noSleep unless a test records.
	sleep func(context.Context, time.Duration) error
}

var (
	hashOnce  sync.Once
	demoHash  string
	otherHash string
)

func passwordHashes(t testing.TB) (string, string) {
	hashOnce.Do(func() {
		var err error
		if demoHash, err = users.HashPassword("demo-pw"); err != nil {
			t.Fatal(err)
		}
		if otherHash, err = users.HashPassword("other-pw"); err != nil {
			t.Fatal(err)
		}
	})
	return demoHash, otherHash
}

func newFixture(t testing.TB, mutate ...func(*Config)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dh, oh := passwordHashes(t)
	seed := []store.User{
		{Username: "demo", Subject: "sub-demo", PasswordHash: dh, DisplayName: "Demo User", Email: "demo@example.com",
			Scopes: []string{"openid", "profile", "email", "offline_access", "Service/Market", "Service/News"}},
		{Username: "off", Subject: "sub-off", PasswordHash: dh, Disabled: true, Scopes: []string{"Service/Market"}},
		{Username: "other", Subject: "sub-other", PasswordHash: oh, Scopes: []string{"offline_access", "Service/Market", "openid"}},
	}
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	if _, err := users.Seed(ctx, st, seed, clk.Now()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, st: st, clock: clk, sleep: noSleep} // throttling is tested on its own
	cfg := testConfig(clk.Now)
	cfg.Sleep = func(ctx context.Context, d time.Duration) error { return f.sleep(ctx, d) }
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := NewServer(ctx, cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f.srv, f.cfg = srv, cfg
	return f
}

// restart builds a new server on the same store, as a process restart or
// a config reload does.
func (f *fixture) restart() {
	f.t.Helper()
	f.serveOn(f.st)
}

// serveOn has a new server on st (the fixture's store, or a wrapper of
// it) answer the fixture's requests from now on.
func (f *fixture) serveOn(st store.Store) {
	f.t.Helper()
	srv, err := NewServer(context.Background(), f.cfg, st)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { srv.Close() })
	f.srv = srv
}

func noSleep(context.Context, time.Duration) error { return nil }

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
	err    error // from serve: the body is not the JSON it claims to be
}

func (r response) str(k string) string {
	s, _ := r.body[k].(string)
	return s
}

// post sends a form to the token endpoint through the server's handler.
func (f *fixture) post(form url.Values, mods ...func(*http.Request)) response {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, m := range mods {
		m(req)
	}
	return f.do(req)
}

func (f *fixture) do(req *http.Request) response {
	f.t.Helper()
	out := f.serve(req)
	if out.err != nil {
		f.t.Fatal(out.err)
	}
	return out
}

// serve is do without failing the test, for goroutines other than the
// test's own (t.Fatal must be called from the test goroutine): a body
// that should be JSON and is not is reported in response.err.
func (f *fixture) serve(req *http.Request) response {
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	res := rec.Result()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			out.err = fmt.Errorf("response is not JSON: %v: %s", err, raw)
		}
	}
	// Every error body of every test: RFC 6749 §5.2's character set.
	if d := out.str("error_description"); strings.IndexFunc(d, func(r rune) bool { return !oauth.DescriptionChar(r) }) >= 0 {
		out.err = fmt.Errorf("error_description %q has a character RFC 6749 §5.2 forbids", d)
	}
	return out
}

// refreshRequest is a refresh-grant request of clientID.
func refreshRequest(clientID, token string) *http.Request {
	body := form("grant_type", "refresh_token", "client_id", clientID, "refresh_token", token).Encode()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

func basic(id, secret string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret)) }
}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func (f *fixture) login(user, pw string, extra ...string) response {
	f.t.Helper()
	return f.post(form(append([]string{"grant_type", "password", "client_id", "app", "username", user, "password", pw}, extra...)...))
}

func (f *fixture) refresh(clientID, token string, mods ...func(*http.Request)) response {
	f.t.Helper()
	return f.post(form("grant_type", "refresh_token", "client_id", clientID, "refresh_token", token), mods...)
}

// parseToken verifies a JWT against the server's published JWKS with
// golang-jwt, pinning RS256, and returns its claims and header.
func (f *fixture) parseToken(tok string, typ string) (jwt.MapClaims, map[string]any) {
	f.t.Helper()
	jwks := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathJWKS, nil))
	var set keys.JWKS
	if err := json.Unmarshal([]byte(jwks.raw), &set); err != nil {
		f.t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		for _, k := range set.Keys {
			if k.Kid == kid {
				n, _ := base64.RawURLEncoding.DecodeString(k.N)
				e, _ := base64.RawURLEncoding.DecodeString(k.E)
				return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
			}
		}
		return nil, jwt.ErrTokenUnverifiable
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(f.clock.Now), jwt.WithIssuer(testIssuer))
	if err != nil {
		f.t.Fatalf("token does not verify: %v", err)
	}
	if got := parsed.Header["typ"]; got != typ {
		f.t.Fatalf("typ = %v, want %s", got, typ)
	}
	return claims, parsed.Header
}

// allocDuring is the bytes allocated (TotalAlloc) and the time fn took.
func allocDuring(fn func()) (uint64, time.Duration) {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	start := time.Now()
	fn()
	d := time.Since(start)
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc, d
}

// parallel runs fn(i) for i in [0, n), width at a time.
func parallel(n, width int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
