package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	identityusers "github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"
	"go.uber.org/zap"
)

// Validate checks the configuration: the glue's own shape (remote-only
// mode, durations Caddy parsed), then the core's rules, by the core's
// Validate methods, which are the only home of those rules. It changes
// nothing and opens nothing, so `gatehouse validate` on a bad config writes
// no file. Provision runs the same check before it acquires the store.
func (a *App) Validate() error {
	_, err := a.check()
	return err
}

// check validates the configuration and returns the identity server's
// configuration it converts to (zero in remote-only mode).
func (a *App) check() (identity.Config, error) {
	if err := a.checkAudit(); err != nil {
		return identity.Config{}, err
	}
	if a.Issuer == "" {
		if !a.VerifierConfig.remote() {
			return identity.Config{}, errors.New("issuer is required (or a verifier with issuer and jwks_url, for remote-only mode)")
		}
		if err := a.checkRemoteOnly(); err != nil {
			return identity.Config{}, err
		}
		return identity.Config{}, a.checkVerifier()
	}
	if err := a.checkDurations(); err != nil {
		return identity.Config{}, err
	}
	if a.MinPasswordLength < 0 || a.MinPasswordLength > identityusers.MaxPasswordLength {
		return identity.Config{}, fmt.Errorf("min_password_length %d: between 1 and %d", a.MinPasswordLength, identityusers.MaxPasswordLength)
	}
	cfg, err := a.IdentityConfig()
	if err != nil {
		return identity.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return identity.Config{}, err
	}
	return cfg, a.checkVerifier()
}

// checkRemoteOnly checks that an app without an issuer sets nothing that
// only an identity server uses.
func (a *App) checkRemoteOnly() error {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"access_token_lifetime", a.AccessTokenLifetime != 0},
		{"id_token_lifetime", a.IDTokenLifetime != 0},
		{"code_lifetime", a.CodeLifetime != 0},
		{"device_code_lifetime", a.DeviceCodeLifetime != 0},
		{"device_poll_interval", a.DevicePollInterval != 0},
		{"session_idle_timeout", a.SessionIdleTimeout != 0},
		{"session_lifetime", a.SessionLifetime != 0},
		{"refresh_token", a.RefreshToken != nil},
		{"uniform_error_status", a.UniformErrorStatus},
		{"hsts", a.HSTS != ""},
		{"password_hash_concurrency", a.PasswordHashConcurrency != 0},
		{"users_file", a.UsersFile != ""},
		{"clients", len(a.Clients) > 0},
		{"api_resources", len(a.APIResources) > 0},
		{"lockout", a.Lockout != nil},
		{"second_factor", a.SecondFactor != nil},
		{"signing_keys", a.SigningKeys != nil},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("%s set without an issuer: an app without one only verifies another issuer's tokens (remote-only mode)",
			strings.Join(set, ", "))
	}
	if a.VerifierConfig.Issuer == "" {
		return errors.New("verifier: issuer is required without the app's issuer (remote-only mode)")
	}
	return nil
}

// checkDurations names the field of a negative duration (the core would
// only say which rule broke).
func (a *App) checkDurations() error {
	durations := []struct {
		name string
		d    caddy.Duration
	}{
		{"access_token_lifetime", a.AccessTokenLifetime},
		{"id_token_lifetime", a.IDTokenLifetime},
		{"code_lifetime", a.CodeLifetime},
		{"device_code_lifetime", a.DeviceCodeLifetime},
		{"device_poll_interval", a.DevicePollInterval},
		{"session_idle_timeout", a.SessionIdleTimeout},
		{"session_lifetime", a.SessionLifetime},
	}
	if r := a.RefreshToken; r != nil {
		durations = append(durations, struct {
			name string
			d    caddy.Duration
		}{"refresh_token.sliding_lifetime", r.SlidingLifetime}, struct {
			name string
			d    caddy.Duration
		}{"refresh_token.absolute_lifetime", r.AbsoluteLifetime})
	}
	type named = struct {
		name string
		d    caddy.Duration
	}
	for _, c := range a.Clients {
		durations = append(durations, named{fmt.Sprintf("client %q: access_token_lifetime", c.ID), c.AccessTokenLifetime})
		if r := c.RefreshToken; r != nil {
			durations = append(durations,
				named{fmt.Sprintf("client %q: refresh_token.sliding_lifetime", c.ID), r.SlidingLifetime},
				named{fmt.Sprintf("client %q: refresh_token.absolute_lifetime", c.ID), r.AbsoluteLifetime})
		}
	}
	if l := a.Lockout; l != nil {
		durations = append(durations, named{"lockout.duration", l.Duration}, named{"lockout.window", l.Window},
			named{"lockout.base_delay", l.BaseDelay}, named{"lockout.max_delay", l.MaxDelay})
	}
	if k := a.SigningKeys; k != nil {
		durations = append(durations, named{"signing_keys.announce", k.Announce}, named{"signing_keys.check_interval", k.CheckInterval})
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("%s must be positive, got %v", d.name, time.Duration(d.d))
		}
	}
	return nil
}

// checkVerifier checks the verifier's configuration with the verifier's
// own rules.
func (a *App) checkVerifier() error {
	v := a.VerifierConfig
	if v == nil {
		return nil
	}
	if v.remote() {
		if err := (verify.RemoteConfig{URL: v.JWKSURL}).Validate(); err != nil {
			return fmt.Errorf("verifier: %w", err)
		}
	}
	cfg := v.verifyConfig(a.Issuer, a.Audience)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	return nil
}

// validating is true in a `validate` command (caddy validate, gatehouse validate):
// Caddy provisions every module to validate a config, and this process then writes
// nothing anywhere. The store is only read (openValidationStore), the identity server
// runs on a throwaway store, and the SQLite query engine on a copy of its database.
var validating = len(os.Args) > 1 && (os.Args[1] == "validate" || os.Args[1] == "adapt" && slices.Contains(os.Args, "--validate"))

// Validating reports whether this process only validates a config: modules that
// would write (create a database, seed it) must not.
func Validating() bool { return validating }

// openValidationStore reads the configured store's state without changing it, says
// what a start would do to it, and gives the app a throwaway SQLite store in a
// temporary directory (removed at Cleanup), so that everything else (the users file,
// the signing keys, the clients) is checked as a start would.
func (a *App) openValidationStore(ctx caddy.Context) error {
	opener, err := a.loadStoreModule(ctx)
	if err != nil {
		return err
	}
	if st, ok := opener.(StoreStatuser); ok {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		status, err := st.StoreStatus(sctx)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("validate: reading the store: %w", err)
		case status.Current > status.Latest:
			return fmt.Errorf("validate: the store's schema is at version %d, newer than this program's %d", status.Current, status.Latest)
		case status.Absent:
			a.logger.Warn("validate: the store holds no schema yet: everything but the store was checked; a start creates it")
		case status.Current < status.Latest:
			pending := make([]int, 0, status.Latest-status.Current)
			for v := status.Current + 1; v <= status.Latest; v++ {
				pending = append(pending, v)
			}
			a.logger.Info("validate: the store's schema is older than this program's: a start applies the pending migrations",
				zap.Int("schema_version", status.Current), zap.Ints("pending_migrations", pending))
		default:
			a.logger.Info("validate: the store's schema is current", zap.Int("schema_version", status.Current))
		}
	}
	dir, err := os.MkdirTemp("", "gatehouse-validate-")
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "validate.db"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("validate: opening a throwaway store: %w", err)
	}
	a.store, a.validateDir = st, dir
	return nil
}
