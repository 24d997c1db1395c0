package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the gatehouse app: the OAuth 2.0 / OpenID Connect identity server,
// its store and its users. It serves nothing by itself; the
// gatehouse_identity handler routes requests to it.
type App struct {
	// Issuer is the absolute base URL of the identity server, as clients
	// reach it, e.g. "https://auth.example.com", without a trailing slash.
	// Required. It is the "iss" of every token, discovery publishes the
	// endpoints under it, and its path (if any) prefixes every endpoint path.
	Issuer string `json:"issuer,omitempty"`

	// Audience is the "aud" of every access token: the name of the API
	// resource the tokens are for. Default "gatehouse". Every verifier of
	// these tokens must expect the same value.
	Audience string `json:"audience,omitempty"`

	// AccessTokenLifetime is how long access tokens live. Default 1h. A
	// longer lifetime keeps a stolen or revoked-by-logout token usable for
	// longer.
	AccessTokenLifetime caddy.Duration `json:"access_token_lifetime,omitempty"`

	// IDTokenLifetime is how long ID tokens live. Default 5m.
	IDTokenLifetime caddy.Duration `json:"id_token_lifetime,omitempty"`

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

	// Store is where signing keys, server secrets, users and refresh tokens
	// are kept: a module of the gatehouse.stores namespace, named by its
	// "backend" key. Default: {"backend": "sqlite"} at the default path.
	// Several gatehouse instances must share one store to share tokens.
	StoreRaw json.RawMessage `json:"store,omitempty" caddy:"namespace=gatehouse.stores inline_key=backend"`

	// Clients are the registered OAuth clients. Default: none (no request
	// can get a token).
	Clients []Client `json:"clients,omitempty"`

	logger   *zap.Logger
	storeKey string // the pool key of the acquired store; "" when none is held
	store    store.Store
	srv      *identity.Server
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "gatehouse",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision opens the store (shared with other configurations that name the
// same one), seeds the users file and builds the identity server.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	opener, err := a.loadStoreModule(ctx)
	if err != nil {
		return err
	}
	key := opener.StoreKey()
	st, err := acquireStore(ctx, key, opener)
	if err != nil {
		return err
	}
	a.storeKey, a.store = key, st

	if a.UsersFile != "" {
		users, err := identity.LoadUsersFile(a.UsersFile)
		if err != nil {
			return err
		}
		n, err := identity.SeedUsers(ctx, st, users, time.Now())
		if err != nil {
			return err
		}
		a.logger.Info("users file loaded", zap.String("path", a.UsersFile),
			zap.Int("users", len(users)), zap.Int("created", n))
	}

	cfg, err := a.identityConfig()
	if err != nil {
		return err
	}
	a.srv, err = identity.NewServer(ctx, cfg, st)
	if err != nil {
		return fmt.Errorf("starting identity server: %w", err)
	}
	return nil
}

// loadStoreModule loads the store module, the default one when none is
// configured.
func (a *App) loadStoreModule(ctx caddy.Context) (StoreOpener, error) {
	if a.StoreRaw == nil {
		a.StoreRaw = caddyconfig.JSONModuleObject(SQLiteStore{}, "backend", "sqlite", nil)
	}
	mod, err := ctx.LoadModule(a, "StoreRaw")
	if err != nil {
		return nil, fmt.Errorf("loading store module: %w", err)
	}
	opener, ok := mod.(StoreOpener)
	if !ok {
		return nil, fmt.Errorf("store module %T does not open a store", mod)
	}
	return opener, nil
}

// identityConfig converts the app's configuration into the identity
// server's.
func (a *App) identityConfig() (identity.Config, error) {
	cfg := identity.Config{
		Issuer:                  a.Issuer,
		Audience:                a.Audience,
		AccessTokenLifetime:     time.Duration(a.AccessTokenLifetime),
		IDTokenLifetime:         time.Duration(a.IDTokenLifetime),
		Refresh:                 a.RefreshToken.policy(),
		UniformErrorStatus:      a.UniformErrorStatus,
		HSTS:                    a.HSTS,
		PasswordHashConcurrency: a.PasswordHashConcurrency,
		Logger:                  a.logger,
	}
	for _, c := range a.Clients {
		ic, err := c.identityClient()
		if err != nil {
			return identity.Config{}, err
		}
		cfg.Clients = append(cfg.Clients, ic)
	}
	return cfg, nil
}

// Validate checks the configuration. It changes nothing.
func (a *App) Validate() error {
	if err := checkIssuer(a.Issuer); err != nil {
		return err
	}
	if err := errors.Join(
		checkDuration("access_token_lifetime", a.AccessTokenLifetime),
		checkDuration("id_token_lifetime", a.IDTokenLifetime),
	); err != nil {
		return err
	}
	if err := a.RefreshToken.validate(""); err != nil {
		return err
	}
	if a.PasswordHashConcurrency < 0 {
		return fmt.Errorf("password_hash_concurrency must not be negative, got %d", a.PasswordHashConcurrency)
	}
	seen := make(map[string]bool, len(a.Clients))
	for i, c := range a.Clients {
		if c.ID == "" {
			return fmt.Errorf("client %d: id is required", i)
		}
		if seen[c.ID] {
			return fmt.Errorf("client %q: id used twice", c.ID)
		}
		seen[c.ID] = true
		if err := c.validate(); err != nil {
			return err
		}
	}
	return nil
}

// Start does nothing: the app serves through the gatehouse_identity handler.
func (a *App) Start() error { return nil }

// Stop does nothing; Cleanup releases the app's resources.
func (a *App) Stop() error { return nil }

// Cleanup closes the identity server and releases the store, which the pool
// closes when no other configuration holds it. It copes with a half-done
// Provision and with being called twice.
func (a *App) Cleanup() error {
	var errs []error
	if a.srv != nil {
		if err := a.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing identity server: %w", err))
		}
		a.srv = nil
	}
	if a.storeKey != "" {
		if err := releaseStore(a.storeKey); err != nil {
			errs = append(errs, err)
		}
		a.storeKey, a.store = "", nil
	}
	return errors.Join(errs...)
}

// Server returns the identity server; nil before Provision and after
// Cleanup.
func (a *App) Server() *identity.Server { return a.srv }

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
