package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store"
	identityusers "github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"

	"github.com/gatehouse/gatehouse/internal/contain"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the gatehouse app: the OAuth 2.0 / OpenID Connect identity server,
// its store and its users, and the access-token check that protected routes
// use. It serves nothing by itself; the gatehouse_identity handler routes
// requests to the identity server, and gatehouse_auth checks tokens with
// the app's verifier.
//
// Without an issuer the app runs in remote-only mode: it builds no identity
// server and only verifies tokens of another issuer (see Verifier).
type App struct {
	// Issuer is the absolute base URL of the identity server, as clients
	// reach it, e.g. "https://auth.example.com", without a trailing slash.
	// It is the "iss" of every token, discovery publishes the endpoints
	// under it, and its path (if any) prefixes every endpoint path.
	// Required, unless the app only verifies another issuer's tokens
	// (verifier with issuer and jwks_url, and no identity-server setting).
	Issuer string `json:"issuer,omitempty"`

	// Audience is the "aud" of every access token: the name of the API
	// resource the tokens are for. Default "gatehouse". Every verifier of
	// these tokens must expect the same value. No client may have it for
	// its ID (its ID tokens would then carry the same aud).
	Audience string `json:"audience,omitempty"`

	// AccessTokenLifetime is how long access tokens live. Default 1h. A
	// longer lifetime keeps a stolen or revoked-by-logout token usable for
	// longer.
	AccessTokenLifetime caddy.Duration `json:"access_token_lifetime,omitempty"`

	// IDTokenLifetime is how long ID tokens live. Default 5m.
	IDTokenLifetime caddy.Duration `json:"id_token_lifetime,omitempty"`

	// CodeLifetime is how long an authorization code may be exchanged at
	// the token endpoint. Default 60s. A longer lifetime gives a stolen
	// code more time.
	CodeLifetime caddy.Duration `json:"code_lifetime,omitempty"`

	// DeviceCodeLifetime is how long a device code and its user code
	// (RFC 8628 device flow) may be used: the user has this long to enter
	// the code on the verification page. Default 10m. A longer lifetime
	// gives a guesser of user codes more time.
	DeviceCodeLifetime caddy.Duration `json:"device_code_lifetime,omitempty"`

	// DevicePollInterval is the least time a device must wait between two
	// polls of the token endpoint (RFC 8628 interval); a faster poll is
	// answered slow_down and the interval grows by 5s. Default 5s.
	DevicePollInterval caddy.Duration `json:"device_poll_interval,omitempty"`

	// SessionIdleTimeout is how long a browser's login session (the
	// session cookie of the login page) lasts unused. Default 10h.
	SessionIdleTimeout caddy.Duration `json:"session_idle_timeout,omitempty"`

	// SessionLifetime is how long a login session lasts at most, however
	// often it is used; then the user logs in again. Default 7 days
	// (168h).
	SessionLifetime caddy.Duration `json:"session_lifetime,omitempty"`

	// RefreshToken is the default refresh-token policy; each client may
	// override it. Defaults: see RefreshToken.
	RefreshToken *RefreshToken `json:"refresh_token,omitempty"`

	// UniformErrorStatus makes every token-endpoint error answer 400, as
	// IdentityServer does, instead of RFC 6749's 401 with WWW-Authenticate
	// for a failed client authentication through the Authorization header.
	// Default false (RFC 6749 behaviour).
	UniformErrorStatus bool `json:"uniform_error_status,omitempty"`

	// HSTS is the Strict-Transport-Security value sent on token responses.
	// Default "max-age=31536000". Browsers ignore it over plain HTTP.
	HSTS string `json:"hsts,omitempty"`

	// PasswordHashConcurrency bounds how many password hashes (argon2id,
	// ~19 MiB of memory each) are checked at once; further logins wait.
	// Default: the number of CPUs. A high value lets a burst of logins use
	// a lot of memory.
	PasswordHashConcurrency int `json:"password_hash_concurrency,omitempty"`

	// UsersFile is the path of a JSON users file (see identity.UsersFile),
	// relative to the working directory. Users it names that the store
	// does not hold yet are created at every start and reload; users the
	// store already holds are left as they are, so changes made with
	// `gatehouse user` survive. Default: none. The file holds password
	// hashes: keep it readable by the server only.
	UsersFile string `json:"users_file,omitempty"`

	// MinPasswordLength is the fewest characters a password set with
	// `gatehouse user add`, `passwd` or `hash` may have (Unicode code
	// points; any character, no composition rule; up to 256 accepted).
	// Default 15, as NIST SP 800-63B-4 asks where the password is the only
	// factor. A lower value weakens every account it lets through.
	MinPasswordLength int `json:"min_password_length,omitempty"`

	// Store is where signing keys, server secrets, users and refresh tokens
	// are kept: a module of the gatehouse.stores namespace, named by its
	// "backend" key. Default: {"backend": "sqlite"} at the default path.
	// Several gatehouse instances must share one store to share tokens.
	StoreRaw json.RawMessage `json:"store,omitempty" caddy:"namespace=gatehouse.stores inline_key=backend"`

	// Clients are the registered OAuth clients. Default: none (no request
	// can get a token).
	Clients []Client `json:"clients,omitempty"`

	// APIResources are the APIs that may call the introspection endpoint
	// for the tokens issued for them (whose "aud" holds their name),
	// authenticating with their name and a secret, as IdentityServer's API
	// resources do. Default: none.
	APIResources []APIResource `json:"api_resources,omitempty"`

	// Lockout is the brute-force defence of the password grant. Default:
	// see Lockout.
	Lockout *Lockout `json:"lockout,omitempty"`

	// SecondFactor names the scopes that need a second factor, and how
	// TOTP factors are named in authenticator apps. Default: no scope
	// needs one.
	SecondFactor *SecondFactor `json:"second_factor,omitempty"`

	// SigningKeys is the signing-key lifecycle (announce, sign, retire,
	// remove) and the encryption of private keys at rest. Default: see
	// SigningKeys.
	SigningKeys *SigningKeys `json:"signing_keys,omitempty"`

	// VerifierConfig is the access-token check that gatehouse_auth (and the
	// other services that take bearer tokens) use. Default: this app's own
	// tokens, checked in-process against its own keys, with revocations.
	VerifierConfig *VerifierConfig `json:"verifier,omitempty"`

	// Audit turns on the tamper-evident audit. Default: none (off). See
	// Audit.
	Audit *Audit `json:"audit,omitempty"`

	logger      *zap.Logger
	storeKey    string // the pool key of the acquired store; "" when none is held
	store       store.Store
	srv         *identity.Server
	verifier    *verify.Verifier
	remote      *verify.RemoteKeySet // the remote key set of the verifier, if any
	registry    *prometheus.Registry // where collector is registered
	collector   prometheus.Collector
	cancel      context.CancelFunc // ends the background loops
	runCtx      context.Context    // theirs
	loops       *sync.WaitGroup    // the background loops
	validateDir string             // validating: the throwaway store's directory
	readiness   *readiness         // the readiness probe's checks (gatehouse_health ready); nil until Provision
	auditKey    string             // the pool key of the audit run held; "" when none is
	audit       *audit.Writer      // the audit run's writer; nil when the audit is off
	auditSnap   *snapshotter       // the audit run's entitlement snapshot (audit_snapshot.go); nil when the audit is off
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision checks the whole configuration first (as Validate does, so a
// bad one opens and writes nothing), then opens the store (shared with
// other configurations that name the same one), seeds the users file,
// starts or joins the audit run (with an audit block), builds the identity
// server and the verifier, starts their background loops and registers the
// metrics.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	a.readiness = new(readiness)
	cfg, err := a.check()
	if err != nil {
		return err
	}
	var users identityusers.Loaded
	if a.UsersFile != "" {
		if users, err = identityusers.Load(a.UsersFile); err != nil {
			return err
		}
		for _, u := range users.Users {
			if id, ok := identityusers.ClientNamed(u.Subject, a.ClientIDs()); ok {
				return fmt.Errorf("users file %q: user %q has the subject %q, which names client %q (%w): give the user another subject",
					a.UsersFile, u.Username, u.Subject, id, identityusers.ErrSubjectNamesClient)
			}
		}
	}
	reg := ctx.GetMetricsRegistry()
	if err := RegisterPanics(reg); err != nil {
		return err
	}
	if err := registerTokenMetrics(reg); err != nil {
		return err
	}
	if a.Issuer != "" || a.VerifierConfig.checksRevocations() || a.Audit != nil {
		if validating {
			if err := a.openValidationStore(ctx); err != nil {
				return err
			}
		} else if err := a.acquireConfiguredStore(ctx); err != nil {
			return err
		}
	}
	if a.Audit != nil {
		if err := a.startAudit(ctx); err != nil {
			return err
		}
	}
	if a.Issuer != "" {
		if err := a.startServer(ctx, cfg, users); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	a.cancel, a.runCtx, a.loops = cancel, runCtx, new(sync.WaitGroup)
	if err := a.buildVerifier(runCtx); err != nil {
		return err
	}
	a.collector = newVerifierCollector(a)
	if err := reg.Register(a.collector); err != nil {
		return fmt.Errorf("registering gatehouse metrics: %w", err)
	}
	a.registry = reg
	a.addOwnReadinessChecks()
	if a.auditSnap != nil {
		a.auditSnap.snapshot(ctx, a.audit, a.logger) // the users file has created its users
	}
	return nil
}

// ClientIDs are the IDs of the app's clients, in the config's order.
func (a *App) ClientIDs() []string {
	ids := make([]string, len(a.Clients))
	for i, c := range a.Clients {
		ids[i] = c.ID
	}
	return ids
}

// startServer seeds the users of the users file, builds the identity
// server from cfg, checked already, and seeds the file's TOTP factors.
func (a *App) startServer(ctx caddy.Context, cfg identity.Config, loaded identityusers.Loaded) error {
	users := loaded.Users
	if a.UsersFile != "" {
		seeded, err := identityusers.Seed(ctx, a.store, users, time.Now())
		if err != nil {
			return err
		}
		a.logger.Info("users file loaded", zap.String("path", a.UsersFile),
			zap.Int("users", len(users)), zap.Int("created", seeded.Created))
		if stricter := seeded.Stricter; len(stricter) > 0 {
			a.logger.Warn("users file gives these existing users less than the store holds (disabled, fewer scopes or fewer entitlements), "+
				"and was not applied to them: the file only creates users; change them with the CLI "+
				"(gatehouse user disable <name>, gatehouse user scopes <name> <scope>..., gatehouse user unentitle <name> <VENUE:feed>...)",
				zap.String("path", a.UsersFile), zap.Strings("usernames", stricter))
		}
		if len(seeded.Deleted) > 0 {
			a.logger.Warn("users file lists users whose subject was a deleted user's (gatehouse user delete), "+
				"which no user is given again: they were not added; remove them from the file",
				zap.String("path", a.UsersFile), zap.Strings("usernames", seeded.Deleted))
		}
		if old := identityusers.Outdated(users); len(old) > 0 {
			a.logger.Warn("users file holds password hashes with other parameters than the current argon2id ones: "+
				"they may take longer than the failure floor, which tells those users apart; each is upgraded at its next login",
				zap.String("path", a.UsersFile), zap.Strings("usernames", old))
		}
	}
	cfg.ClientIP = clientIP
	cfg.Metrics = newTokenMetrics(a.Clients)
	if w := a.AuditWriter(); w != nil { // a nil *audit.Writer would be a non-nil Auditor
		cfg.Audit = w
	}
	var err error
	a.srv, err = identity.NewServer(ctx, cfg, a.store)
	if err != nil {
		return fmt.Errorf("starting identity server: %w", err)
	}
	return a.seedFactors(ctx, loaded)
}

// clientIP is the source address of r for the brute-force defence: Caddy's
// client IP, which honours the server's trusted_proxies, else the host of
// RemoteAddr.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Start announces, for an issuer on this machine (the demo's), where to open
// it once it answers (announceReady); the app serves through the
// gatehouse_identity handler.
func (a *App) Start() error {
	if a.Issuer != "" && a.runCtx != nil && !Validating() {
		a.loops.Add(1)
		contain.Go(a.logger, "gatehouse.ready", func() {
			defer a.loops.Done()
			announceReady(a.runCtx, a.logger, a.Issuer, os.Stderr)
		}, nil)
	}
	return nil
}

// Stop does nothing; Cleanup releases the app's resources.
func (a *App) Stop() error { return nil }

// Cleanup stops the background loops, unregisters the metrics, closes the
// identity server and releases the store, which the pool closes when no
// other configuration holds it. It copes with a half-done Provision and with
// being called twice.
func (a *App) Cleanup() error {
	var errs []error
	if a.cancel != nil {
		a.cancel()
		a.loops.Wait()
		a.cancel = nil
	}
	if a.registry != nil {
		a.registry.Unregister(a.collector)
		a.registry, a.collector = nil, nil
	}
	if a.verifier != nil && a.verifier != a.serverVerifier() {
		a.verifier.Close() // the server's closes with the server
	}
	a.verifier, a.remote = nil, nil
	if a.srv != nil {
		if err := a.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing identity server: %w", err))
		}
		a.srv = nil
	}
	if err := a.releaseAudit(); err != nil {
		errs = append(errs, err)
	}
	if a.storeKey != "" {
		if err := releaseStore(a.storeKey); err != nil {
			errs = append(errs, err)
		}
		a.storeKey, a.store = "", nil
	}
	if a.validateDir != "" {
		if a.store != nil {
			errs = append(errs, a.store.Close())
		}
		errs = append(errs, os.RemoveAll(a.validateDir))
		a.validateDir, a.store = "", nil
	}
	return errors.Join(errs...)
}

// Server returns the identity server; nil in remote-only mode, before
// Provision and after Cleanup.
func (a *App) Server() *identity.Server { return a.srv }

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
