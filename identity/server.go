package identity

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/grant"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/logout"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// AuditLoggerName is the logger name of audit events, so operators can
// route them apart.
const AuditLoggerName = "audit"

// Server is the identity server: it builds the domain packages from one
// Config, routes requests to the endpoints, and runs the background work
// (the key schedule, the revocation poll). It is safe for concurrent use;
// everything it holds is read-only after NewServer, apart from what the
// domain packages guard themselves.
type Server struct {
	cfg       Config
	grants    *grant.Endpoint
	store     store.Store
	log       *zap.Logger
	audit     *zap.Logger
	clients   *clients.Registry
	keys      *keys.Manager
	tokens    *tokens.Service
	passwords *users.Checker
	factors   *factors.Service
	verifier  *verify.Verifier
	notifier  *logout.Notifier // back-channel logout; nil without the browser flows
	discovery []byte
	endpoints map[string]http.Handler
	cancel    context.CancelFunc
	done      chan struct{}
}

// NewServer checks cfg (Config.Validate), fills its defaults, loads (or on
// first start generates) the signing keys and server secrets from st, and
// returns the server. The store stays owned by the caller.
func NewServer(ctx context.Context, cfg Config, st store.Store) (*Server, error) {
	if st == nil {
		return nil, errors.New("identity server needs a store")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, store: st, log: cfg.Logger, audit: cfg.Logger.Named(AuditLoggerName)}
	var err error
	s.clients, err = clients.NewRegistry(cfg.Clients, cfg.APIResources,
		clients.Defaults{AccessTokenLifetime: cfg.AccessTokenLifetime, Refresh: cfg.Refresh})
	if err != nil {
		return nil, fmt.Errorf("configuring clients: %w", err)
	}
	clientIDs := make([]string, len(cfg.Clients))
	for i, c := range cfg.Clients {
		clientIDs[i] = c.ID
	}
	if err := s.checkSubjectsOfClients(ctx, clientIDs); err != nil {
		return nil, err
	}
	if s.discovery, err = json.Marshal(newDiscovery(cfg.Issuer, cfg.ScopesSupported, cfg.Keys.WithDefaults().Algorithms)); err != nil {
		return nil, fmt.Errorf("encoding discovery document: %w", err)
	}
	pol := cfg.Keys
	pol.Retention = KeyRetention(cfg)
	if s.keys, err = keys.NewManager(st, pol, cfg.Logger); err != nil {
		return nil, err
	}
	if cfg.Audit != nil {
		s.keys.SetAuditor(cfg.Audit)
	}
	if err := s.keys.Sync(ctx, cfg.Now()); err != nil {
		return nil, err
	}
	refreshSecret, err := loadSecret(ctx, st, tokens.RefreshSecretName, cfg.Keys.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("loading refresh-token secret: %w", err)
	}
	tcfg := tokens.Config{
		Issuer: cfg.Issuer, Audience: cfg.Audience, IDTokenLifetime: cfg.IDTokenLifetime,
		Keys: s.keys, Store: st, RefreshSecret: refreshSecret, Audit: s.audit, Now: cfg.Now,
		MaxAccessLifetime: s.clients.LongestAccessLifetime(cfg.AccessTokenLifetime) + verify.MaxLeeway,
		// s.verifier is made after the token service: read it at the call.
		FamilyRevoked:      func(ctx context.Context, since time.Time) error { return s.verifier.RevokedHere(ctx, since) },
		CodeLifetime:       cfg.CodeLifetime,
		SecondFactorScopes: cfg.SecondFactorScopes,
		IsClient: func(id string) bool {
			_, ok := users.ClientNamed(id, clientIDs)
			return ok
		},
	}
	if cfg.Audit != nil {
		tcfg.Record = cfg.Audit
	}
	if o, ok := st.(store.Outages); ok {
		tcfg.Outages = o // a shared database's outages do not use up a grace window
	}
	if bs := browserStore(st); bs != nil {
		tcfg.Codes, tcfg.Sessions = bs, bs
	}
	if ds := deviceStore(st); ds != nil && browserStore(st) != nil {
		tcfg.Devices = ds
	}
	s.tokens, err = tokens.NewService(tcfg)
	if err != nil {
		return nil, err
	}
	checker := users.CheckerConfig{
		Store: st, Lockout: cfg.Lockout, HashConcurrency: cfg.PasswordHashConcurrency,
		Audit: s.audit, Now: cfg.Now, Sleep: cfg.Sleep,
	}
	if m := cfg.Metrics; m != nil {
		checker.OnLockout = m.Lockout
	}
	if cfg.Audit != nil {
		checker.Record, checker.Refusing = cfg.Audit, cfg.Audit.Refusing
	}
	if s.passwords, err = users.NewChecker(checker); err != nil {
		return nil, err
	}
	// Passkey ceremonies seal their state under a key of the browser
	// flows' secret, which every instance shares.
	browserSecret, err := loadSecret(ctx, st, browserSecretName, cfg.Keys.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("loading the browser flows' secret: %w", err)
	}
	fcfg := factors.Config{
		Store: st, Checker: s.passwords, Issuer: cfg.totpIssuer(), KEK: cfg.Keys.EncryptionKey,
		Audit: s.audit, Now: cfg.Now,
		Revoke: func(ctx context.Context, subject string) error {
			now := cfg.Now()
			if err := st.RevokeSubject(ctx, subject, now, now.Add(tcfg.MaxAccessLifetime)); err != nil {
				return err
			}
			return s.verifier.RevokedHere(ctx, now) // made after this service: read at the call
		},
		Passkeys: st, Users: st, Spent: st, IssuerURL: cfg.Issuer, CeremonyKey: derive(browserSecret, "passkey ceremony"),
	}
	if cfg.Audit != nil {
		fcfg.Record = cfg.Audit
	}
	if s.factors, err = factors.New(fcfg); err != nil {
		return nil, err
	}
	if off := s.factors.PasskeysOff(); off != "" {
		cfg.Logger.Info("passkeys are off", zap.String("reason", off))
	}
	// The server's own check (userinfo, introspection, revocation) always
	// applies revocations.
	s.verifier, err = verify.New(ctx, verify.Config{
		Issuer: cfg.Issuer, Audience: cfg.Audience, Keys: s.keys.Source(cfg.Now), Revocations: st,
		Logger: cfg.Logger, Now: cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("building the access-token verifier: %w", err)
	}
	if err := s.route(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	// The background loops (key rotation, the purge, the revocation
	// list): a panic in one is reported and that loop runs again after a
	// pause; the others go on.
	log := cfg.Logger
	loop := func(wg *sync.WaitGroup, component string, fn func(context.Context)) {
		wg.Add(1)
		contain.Go(log, component, func() {
			defer wg.Done()
			contain.Loop(runCtx, log, component, fn)
		}, nil)
	}
	contain.Go(log, "identity.loops", func() {
		defer close(s.done)
		var wg sync.WaitGroup
		loop(&wg, "identity.keys", func(ctx context.Context) { s.keys.Run(ctx, cfg.Now) })
		if cfg.PurgeInterval > 0 {
			loop(&wg, "identity.purge", s.runPurge)
		}
		loop(&wg, "identity.revocations", s.verifier.Run)
		wg.Wait()
	}, nil)
	return s, nil
}

// loadSecret reads the server secret called name, creating it on first
// start: 32 random bytes, sealed with kek like the signing keys (so a
// stolen store without the key encryption key yields nothing).
func loadSecret(ctx context.Context, st store.Secrets, name string, kek []byte) ([]byte, error) {
	stored, err := st.Secret(ctx, name, func() ([]byte, error) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		return keys.SealSecret(kek, b, name)
	})
	if err != nil {
		return nil, err
	}
	return keys.OpenSecret(kek, stored, name)
}

// route builds the endpoints under the issuer's path.
func (s *Server) route(ctx context.Context) error {
	tokenEndpoint, err := grant.New(grant.Config{
		Clients: s.clients, Tokens: s.tokens, Passwords: s.passwords, ClientIP: s.cfg.ClientIP,
		HSTS: s.cfg.HSTS, UniformErrorStatus: s.cfg.UniformErrorStatus,
		Issued: s.countIssued, Failed: s.countFailed, Logger: s.log, Now: s.cfg.Now, Refusing: s.auditRefusing,
	})
	if err != nil {
		return err
	}
	s.grants = tokenEndpoint
	prefix := issuerPath(s.cfg.Issuer)
	s.endpoints = map[string]http.Handler{
		prefix + PathDiscovery:     http.HandlerFunc(s.serveDiscovery),
		prefix + PathJWKS:          http.HandlerFunc(s.serveJWKS),
		prefix + PathToken:         tokenEndpoint,
		prefix + PathUserinfo:      http.HandlerFunc(s.serveUserinfo),
		prefix + PathIntrospection: http.HandlerFunc(s.serveIntrospect),
		prefix + PathRevocation:    http.HandlerFunc(s.serveRevocation),
	}
	return s.routeBrowser(ctx, prefix)
}

// notAvailable answers every request to an endpoint that this server
// cannot serve (its store lacks the roles the endpoint needs) with 501 and
// an RFC 6749 error body.
func (s *Server) notAvailable(name string) http.Handler {
	e := &oauth.Error{Code: oauth.ErrInvalidRequest, Description: "the " + name + " endpoint is not available on this server",
		Status: http.StatusNotImplemented}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oauth.SecurityHeaders(w.Header(), s.cfg.HSTS)
		s.countFailed(name, e.Code)
		oauth.WriteError(w, e, false)
	})
}

// issuerPath is the path of a validated issuer URL.
func issuerPath(issuer string) string {
	u, _ := url.Parse(issuer) // Validate parsed it
	return u.Path
}

// issuerScheme is the scheme of a validated issuer URL.
func issuerScheme(issuer string) string {
	u, _ := url.Parse(issuer) // Validate parsed it
	return u.Scheme
}

func (s *Server) countIssued(grant, clientID string) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.TokenIssued(grant, clientID)
	}
}

func (s *Server) countFailed(endpoint, code string) {
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.RequestFailed(endpoint, code)
	}
}

// failer is the failure path of the endpoint called name.
func (s *Server) failer(name string) *oauth.Failer {
	return &oauth.Failer{Endpoint: name, Log: s.log, Count: s.countFailed, Uniform: s.cfg.UniformErrorStatus,
		Unavailable: grant.StoreUnavailable}
}

// runPurge purges the store every PurgeInterval until ctx ends.
func (s *Server) runPurge(ctx context.Context) {
	t := time.NewTicker(s.cfg.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			contain.Point("identity.purge")
			s.purge(ctx)
		}
	}
}

// purge removes what has expired, in one pass bounded by purgeTimeout, and
// counts it. A failure is logged; the next pass tries again.
func (s *Server) purge(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, purgeTimeout)
	defer cancel()
	n, err := s.store.DeleteExpired(ctx, s.cfg.Now())
	if bs := browserStore(s.store); err == nil && bs != nil {
		var m int64
		m, err = bs.DeleteExpiredBrowser(ctx, s.cfg.Now())
		n += m
	}
	if ds := deviceStore(s.store); err == nil && ds != nil {
		var m int64
		m, err = ds.DeleteExpiredDeviceCodes(ctx, s.cfg.Now())
		n += m
	}
	if err != nil {
		if parent.Err() == nil { // not the server closing
			s.log.Error("purging expired records", zap.Error(err))
		}
		return
	}
	if n > 0 {
		s.log.Info("expired records purged", zap.Int64("records", n))
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Purged(n)
	}
}

// Endpoint returns the handler for the request path, or nil when the path
// is not one of the server's endpoints (so a caller can pass the request on).
func (s *Server) Endpoint(path string) http.Handler {
	if h, ok := s.endpoints[path]; ok {
		return contained{h, s.log}
	}
	return nil
}

// contained serves an endpoint with a panic contained: it is logged with
// its stack and counted, and the request answered 500 server_error (RFC
// 6749 §5.2) when nothing was written yet; the process goes on.
type contained struct {
	h   http.Handler
	log *zap.Logger
}

func (c contained) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	contain.Serve(c.log, "identity.http", w, r, c.h, func(w http.ResponseWriter, started bool) {
		if !started {
			w.Header().Set("Cache-Control", "no-store")
			oauth.WriteError(w, oauth.ServerError(nil), false)
		}
	})
}

// ServeHTTP serves the server's endpoints and answers 404 for other paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.Endpoint(r.URL.Path); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// RotateKeys forces a rotation of the alg signing key (see keys.Policy;
// "" the first algorithm): the new key signs after the announce time, or
// at once when immediately is set.
func (s *Server) RotateKeys(ctx context.Context, alg string, immediately bool) (string, error) {
	if alg == "" {
		alg = s.keys.Policy().Algorithms[0]
	}
	return s.keys.Rotate(ctx, alg, s.cfg.Now(), immediately)
}

// CheckStore reads the store (one counter, absent), for a readiness probe.
func (s *Server) CheckStore(ctx context.Context) error {
	_, err := s.store.Counter(ctx, "readiness-probe")
	return err
}

// CheckSigningKey reports whether a key of each signing algorithm signs
// now, for a readiness probe.
func (s *Server) CheckSigningKey() error {
	for _, alg := range s.keys.Policy().Algorithms {
		if _, _, err := s.keys.SigningKeyFor(alg, s.cfg.Now()); err != nil {
			return err
		}
	}
	return nil
}

// Keys is the server's key source for verifiers in this process.
func (s *Server) Keys() verify.KeySource { return s.keys.Source(s.cfg.Now) }

// PasswordGrant runs the password grant as the token endpoint would, for
// a client authenticated by id and secret (a public client sends none),
// from source (the caller's address, for the brute-force defence): the
// entry point of the message gateway's AuthOwner. scope may be empty.
func (s *Server) PasswordGrant(ctx context.Context, clientID, clientSecret, username, password, scope, source string) (*tokens.Response, *oauth.Error) {
	c, perr := s.clients.AuthenticateSecret(clientID, clientSecret)
	if perr != nil {
		return nil, perr
	}
	return s.grants.PasswordGrant(ctx, c, username, password, scope, source)
}

// CodeGrant exchanges an authorization code as the token endpoint would,
// for a client authenticated by id and secret (a public client sends
// none): the entry point of the message gateway's AuthCode. The code rules
// are the token endpoint's: client, redirect URI, PKCE verifier, one use.
func (s *Server) CodeGrant(ctx context.Context, clientID, clientSecret, code, redirectURI, verifier string) (*tokens.Response, *oauth.Error) {
	c, perr := s.clients.AuthenticateSecret(clientID, clientSecret)
	if perr != nil {
		return nil, perr
	}
	if !s.tokens.CodesEnabled() {
		return nil, oauth.NewError(oauth.ErrUnsupportedGrantType, "unsupported grant_type")
	}
	return s.grants.CodeGrant(ctx, c, code, redirectURI, verifier)
}

// Passwords is the password checker with the brute-force defence, for the
// other front doors that take a password (the message gateway's
// AuthOwner, the login page).
func (s *Server) Passwords() *users.Checker { return s.passwords }

// Factors are the users' second factors, for the command line.
func (s *Server) Factors() *factors.Service { return s.factors }

// Verifier is the server's access-token check: its own keys, with
// revocations.
func (s *Server) Verifier() *verify.Verifier { return s.verifier }

// Close stops the server's background work and waits for it, and empties
// its verifier's cache (which still verifies, for a drain in progress). It
// does not close the store.
func (s *Server) Close() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.notifier != nil {
		s.notifier.Close()
	}
	if s.verifier != nil {
		s.verifier.Close()
	}
	return nil
}

// checkSubjectsOfClients refuses a store holding a user whose subject
// names a client (users.ClientNamed, but for non-ASCII case: the store
// folds ASCII alone): such a user would be one principal with the client
// to every resource. A user stored so while the server runs gets no token
// (tokens.Config.IsClient, which folds all case) until the next start
// refuses it. It refuses as well a client whose ID was a deleted user's
// subject: a client_credentials token's sub is its client's ID, and a
// subject is never given again (store.Users.DeleteUser).
func (s *Server) checkSubjectsOfClients(ctx context.Context, ids []string) error {
	// The store finds those equal but for ASCII case; ClientNamed folds
	// the rest as the mint-time check does.
	found, err := s.store.UsersWithSubjects(ctx, ids)
	if err != nil {
		return fmt.Errorf("reading the users: %w", err)
	}
	for _, u := range found {
		if id, ok := users.ClientNamed(u.Subject, ids); ok {
			return fmt.Errorf("user %q has the subject %q, which names client %q (%w): give the client another ID",
				u.Username, u.Subject, id, users.ErrSubjectNamesClient)
		}
	}
	deleted, err := s.store.DeletedSubjects(ctx, ids)
	if err != nil {
		return fmt.Errorf("reading the deleted subjects: %w", err)
	}
	for _, sub := range deleted {
		if id, ok := users.ClientNamed(sub, ids); ok {
			return fmt.Errorf("client %q has for its ID the subject %q of a deleted user, which is given to no one again (%w): give the client another ID",
				id, sub, users.ErrSubjectNamesClient)
		}
	}
	return nil
}
