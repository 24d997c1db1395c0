package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// refreshSecretName names the server secret successors are derived with.
const refreshSecretName = "refresh-successor-v1"

// AuditLoggerName is the logger name of audit events, so operators can
// route them apart.
const AuditLoggerName = "audit"

// Server is the identity server. It is safe for concurrent use.
type Server struct {
	cfg           Config
	store         store.Store
	log           *zap.Logger
	audit         *zap.Logger
	clients       map[string]*client
	keys          keySet
	keyMgr        *keyManager
	discovery     []byte
	refreshSecret []byte
	dummyHash     string
	hashSlots     chan struct{}
	prefix        string // the issuer URL's path, prefixed to every endpoint
	endpoints     map[string]http.HandlerFunc
	verifier      *verify.Verifier
	resources     map[string]APIResource
	hashes        atomic.Int64 // password hashes computed, for tests
	sleep         func(context.Context, time.Duration) error
	cancel        context.CancelFunc
	done          chan struct{}
}

// NewServer checks cfg, fills its defaults, loads (or on first start
// generates) the signing keys and server secrets from st, and returns the
// server. The store stays owned by the caller.
func NewServer(ctx context.Context, cfg Config, st store.Store) (*Server, error) {
	if st == nil {
		return nil, errors.New("identity server needs a store")
	}
	prefix, err := applyDefaults(&cfg)
	if err != nil {
		return nil, err
	}
	clients, err := newClients(&cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring clients: %w", err)
	}
	s := &Server{
		cfg: cfg, store: st, log: cfg.Logger, audit: cfg.Logger.Named(AuditLoggerName),
		clients: clients, hashSlots: make(chan struct{}, cfg.PasswordHashConcurrency), prefix: prefix,
		sleep: sleepCtx,
	}
	if s.discovery, err = marshalDiscovery(newDiscovery(cfg.Issuer, cfg.ScopesSupported)); err != nil {
		return nil, fmt.Errorf("encoding discovery document: %w", err)
	}
	s.keyMgr = &keyManager{st: st, pol: cfg.Keys, keys: &s.keys, log: cfg.Logger}
	s.keyMgr.pol.Retention = retention(&cfg, clients)
	if err := s.keyMgr.sync(ctx, cfg.Now()); err != nil {
		return nil, err
	}
	s.refreshSecret, err = st.Secret(ctx, refreshSecretName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("loading refresh-token secret: %w", err)
	}
	if s.dummyHash, err = HashPassword("gatehouse-dummy-password"); err != nil {
		return nil, fmt.Errorf("preparing dummy password hash: %w", err)
	}
	if s.resources, err = newResources(cfg.APIResources, clients); err != nil {
		return nil, err
	}
	// The server's own check (userinfo, introspection, revocation) always
	// applies revocations.
	s.verifier, err = verify.New(ctx, verify.Config{
		Issuer: cfg.Issuer, Audience: cfg.Audience, Keys: s, Revocations: st,
		Logger: cfg.Logger, Now: cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("building the access-token verifier: %w", err)
	}
	s.endpoints = map[string]http.HandlerFunc{
		prefix + PathDiscovery:     s.serveDiscovery,
		prefix + PathJWKS:          s.serveJWKS,
		prefix + PathToken:         s.serveToken,
		prefix + PathUserinfo:      s.serveUserinfo,
		prefix + PathIntrospection: s.serveIntrospect,
		prefix + PathRevocation:    s.serveRevocation,
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		var wg sync.WaitGroup
		wg.Go(func() { s.keyMgr.run(runCtx, cfg.Now) })
		s.verifier.Run(runCtx)
		wg.Wait()
	}()
	return s, nil
}

// applyDefaults checks cfg and fills its zero fields; it returns the
// issuer's path.
func applyDefaults(cfg *Config) (string, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.HasSuffix(cfg.Issuer, "/") {
		return "", fmt.Errorf("issuer %q must be an absolute http(s) URL without query, fragment or trailing slash", cfg.Issuer)
	}
	if cfg.Audience == "" {
		cfg.Audience = "gatehouse"
	}
	if cfg.AccessTokenLifetime <= 0 {
		cfg.AccessTokenLifetime = time.Hour
	}
	if cfg.IDTokenLifetime <= 0 {
		cfg.IDTokenLifetime = 5 * time.Minute
	}
	if cfg.Refresh.Grace == 0 {
		cfg.Refresh.Grace = 5 * time.Second
	}
	if cfg.Refresh.SlidingLifetime <= 0 {
		cfg.Refresh.SlidingLifetime = 15 * 24 * time.Hour
	}
	if cfg.Refresh.AbsoluteLifetime <= 0 {
		cfg.Refresh.AbsoluteLifetime = 30 * 24 * time.Hour
	}
	if len(cfg.ScopesSupported) == 0 {
		cfg.ScopesSupported = DefaultScopes
	}
	if cfg.HSTS == "" {
		cfg.HSTS = "max-age=31536000"
	}
	if cfg.PasswordHashConcurrency <= 0 {
		cfg.PasswordHashConcurrency = runtime.NumCPU()
	}
	if err := applyKeyDefaults(&cfg.Keys); err != nil {
		return "", err
	}
	applyLockoutDefaults(&cfg.Lockout)
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteHost
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return u.Path, nil
}

// Endpoint returns the handler for the request path, or nil when the path
// is not one of the server's endpoints (so a caller can pass the request on).
func (s *Server) Endpoint(path string) http.Handler {
	if h, ok := s.endpoints[path]; ok {
		return h
	}
	return nil
}

// ServeHTTP serves the server's endpoints and answers 404 for other paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.Endpoint(r.URL.Path); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// Issuer is the configured issuer URL.
func (s *Server) Issuer() string { return s.cfg.Issuer }

// RotateKeys forces a signing-key rotation (see KeyPolicy): the new key
// signs after the announce time, or at once when immediately is set.
func (s *Server) RotateKeys(ctx context.Context, immediately bool) (string, error) {
	return s.keyMgr.rotate(ctx, s.cfg.Now(), immediately)
}

// retention is how long a retired key must stay published: the longest
// token it can have signed, plus the verifiers' leeway and a margin.
func retention(cfg *Config, clients map[string]*client) time.Duration {
	longest := max(cfg.AccessTokenLifetime, cfg.IDTokenLifetime)
	for _, c := range clients {
		longest = max(longest, c.accessLifetime)
	}
	return longest + 10*time.Minute
}

// KeyRetention is how long a server with cfg keeps a retired key
// published, for tools that rotate keys in the store without a server
// (`gatehouse keys rotate`). Zero lifetimes count as their defaults.
func KeyRetention(cfg Config) (time.Duration, error) {
	if cfg.Issuer == "" {
		cfg.Issuer = "http://localhost"
	}
	if _, err := applyDefaults(&cfg); err != nil {
		return 0, err
	}
	clients, err := newClients(&cfg)
	if err != nil {
		return 0, err
	}
	return retention(&cfg, clients), nil
}

// Verifier is the server's access-token check: its own keys, with
// revocations.
func (s *Server) Verifier() *verify.Verifier { return s.verifier }

// Close stops the server's background work and waits for it. It does not
// close the store.
func (s *Server) Close() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	return nil
}
