package identity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/device"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/users"
)

// Defaults of Config.
const (
	DefaultAudience            = "gatehouse"
	DefaultAccessTokenLifetime = time.Hour
	DefaultIDTokenLifetime     = 5 * time.Minute
	DefaultHSTS                = "max-age=31536000"
	DefaultPurgeInterval       = 10 * time.Minute
	// purgeTimeout bounds one purge pass.
	purgeTimeout = time.Minute
	// retentionMargin is added to the longest token lifetime to get how
	// long a retired key stays published: verifiers' leeway and clock skew.
	retentionMargin = 10 * time.Minute
)

// DefaultScopes are the scopes published when Config.ScopesSupported is empty.
var DefaultScopes = []string{
	"openid", "profile", "email", "roles", "Identity/Admin", "Service/Market",
	"Service/News", "Service/Trading", "Service/OrderPad", "Service/Admin", "offline_access",
}

// Config configures a Server. Zero values take the defaults named per field.
type Config struct {
	// Issuer is the absolute base URL of the identity server, e.g.
	// "https://auth.example.com" (no trailing slash). Required. Endpoint
	// URLs are built under it, and its path prefixes every endpoint path.
	Issuer string
	// Audience is the "aud" of every access token. Default "gatehouse".
	// No client may have it for its ID.
	Audience string
	// AccessTokenLifetime is the default lifetime of access tokens.
	// Default 1h.
	AccessTokenLifetime time.Duration
	// IDTokenLifetime is the lifetime of ID tokens. Default 5m.
	IDTokenLifetime time.Duration
	// Refresh is the default refresh-token policy.
	Refresh clients.RefreshPolicy
	// Clients are the registered clients.
	Clients []clients.Config
	// ScopesSupported is the list published in discovery. Default:
	// DefaultScopes, the scopes of the interface.
	ScopesSupported []string
	// UniformErrorStatus makes every token-endpoint error answer 400, as
	// IdentityServer does, instead of RFC 6749's 401 for a failed client
	// authentication through the Authorization header.
	UniformErrorStatus bool
	// HSTS is the Strict-Transport-Security value sent on token responses.
	// Default "max-age=31536000".
	HSTS string
	// BackchannelClient sends back-channel logout tokens to clients'
	// backchannel_logout_uri. Default: an http.Client that follows no
	// redirect, each attempt bounded by a timeout.
	BackchannelClient *http.Client
	// PasswordHashConcurrency bounds how many password hashes are checked
	// at once. Default: the number of CPUs.
	PasswordHashConcurrency int
	// Keys is the signing-key lifecycle and its encryption at rest. Its
	// Retention is computed from the token lifetimes.
	Keys keys.Policy
	// Lockout is the brute-force defence of the password checks, and of
	// the second factors' codes.
	Lockout users.LockoutPolicy
	// SecondFactorScopes are the scopes a user's token carries only when
	// its sign-in passed a second factor (tokens.Config). Each must be in
	// ScopesSupported. Default: none.
	SecondFactorScopes []string
	// TOTPIssuer is the name authenticator apps show beside a TOTP factor.
	// Default: the issuer URL's host.
	TOTPIssuer string
	// ClientIP returns the request's source address, e.g. Caddy's client
	// IP (which honours trusted_proxies). Default: the host of RemoteAddr.
	ClientIP func(*http.Request) string
	// Metrics receives counts for monitoring. Default: none.
	Metrics Metrics
	// APIResources are the APIs that may call the introspection endpoint
	// for tokens of their audience, authenticating with their name and
	// secret (client_secret_basic or _post), as IdentityServer's API
	// resources do.
	APIResources []clients.APIResource

	// PurgeInterval is how often expired refresh families, access-token
	// records, revocations, stale failure counters and (with a browser
	// store) expired sessions, codes and consents are removed from the
	// store. Default 10m; negative disables the purge (another instance
	// sharing the store may do it).
	PurgeInterval time.Duration

	// CodeLifetime is how long an authorization code may be exchanged.
	// Default 60s (tokens.DefaultCodeLifetime).
	CodeLifetime time.Duration
	// DeviceCodeLifetime is how long a device code and its user code may
	// be used (RFC 8628 expires_in). Default 10 minutes.
	DeviceCodeLifetime time.Duration
	// DevicePollInterval is the least time between two polls of a device
	// code (RFC 8628 interval). Default 5 seconds.
	DevicePollInterval time.Duration
	// DeviceEntryLimits bound wrong user codes on the device verification
	// page (per address, per session, server-wide). Default
	// device.DefaultLimits.
	DeviceEntryLimits device.Limits
	// SessionIdleTimeout is how long a browser's login session lasts
	// unused. Default 10h.
	SessionIdleTimeout time.Duration
	// SessionLifetime is how long a login session lasts at most, however
	// often it is used. Default 7 days.
	SessionLifetime time.Duration

	// Audit receives the audit records of tokens issued, refused logins,
	// revocations and signing-key changes (audit.go), and says when
	// logins and token requests are to be refused because the audit
	// cannot write. Default: none.
	Audit Auditor
	// Logger receives operational logs. Default: a no-op logger.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sleep waits the brute-force throttle's delays. Default: a timer that
	// ends with the request's context.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Metrics receives the server's counts; caddymodule exports them to
// Prometheus. Labels are bounded: client ids only of configured clients,
// error codes from oauth.ErrorCodes.
type Metrics interface {
	// TokenIssued counts a token response by grant type and client.
	TokenIssued(grant, clientID string)
	// RequestFailed counts a failed request by endpoint ("token",
	// "introspection", "revocation", "userinfo", "authorization",
	// "login", "consent") and error code.
	RequestFailed(endpoint, code string)
	// Lockout counts a (user, source) pair locked out.
	Lockout()
	// Purged counts the records a purge pass removed.
	Purged(records int64)
}

// Validate checks cfg without changing it or touching any store: the
// issuer, the lifetimes, the clients and API resources, the key policy and
// the lockout policy. NewServer calls it; so does the Caddy glue before it
// opens anything.
func (cfg *Config) Validate() error {
	if err := validateIssuer(cfg.Issuer); err != nil {
		return err
	}
	if cfg.AccessTokenLifetime < 0 || cfg.IDTokenLifetime < 0 || cfg.CodeLifetime < 0 ||
		cfg.DeviceCodeLifetime < 0 || cfg.DevicePollInterval < 0 {
		return errors.New("token and code lifetimes must not be negative")
	}
	if cfg.SessionIdleTimeout < 0 || cfg.SessionLifetime < 0 {
		return errors.New("session lifetimes must not be negative")
	}
	if cfg.SessionIdleTimeout > 0 && cfg.SessionLifetime > 0 && cfg.SessionIdleTimeout > cfg.SessionLifetime {
		return fmt.Errorf("session idle timeout %v exceeds the session lifetime %v", cfg.SessionIdleTimeout, cfg.SessionLifetime)
	}
	if cfg.PasswordHashConcurrency < 0 {
		return fmt.Errorf("password hash concurrency must not be negative, got %d", cfg.PasswordHashConcurrency)
	}
	for _, s := range cfg.ScopesSupported {
		if strings.ContainsAny(s, " \"\\") || s == "" {
			return fmt.Errorf("supported scope %q is not a scope token", s)
		}
	}
	if err := cfg.Refresh.Validate(); err != nil {
		return err
	}
	if err := clients.ValidateAll(cfg.Clients, cfg.APIResources); err != nil {
		return fmt.Errorf("configuring clients: %w", err)
	}
	aud := cmp.Or(cfg.Audience, DefaultAudience)
	for _, c := range cfg.Clients {
		// Its ID tokens would carry the access tokens' aud: only their
		// typ would still tell them apart (RFC 8725 §3.11-3.12).
		if c.ID == aud {
			return fmt.Errorf("configuring clients: client %q has the access tokens' audience for its ID: rename the client or the audience", c.ID)
		}
	}
	if err := cfg.Keys.Validate(); err != nil {
		return err
	}
	for _, c := range cfg.Clients {
		for _, alg := range []string{c.AccessTokenSigningAlg, c.IDTokenSignedResponseAlg} {
			if alg != "" && !cfg.Keys.Signs(alg) {
				return fmt.Errorf("configuring clients: client %q signs with %s, which is not among the signing algorithms %v",
					c.ID, alg, cfg.Keys.WithDefaults().Algorithms)
			}
		}
	}
	published := cfg.ScopesSupported
	if len(published) == 0 {
		published = DefaultScopes
	}
	if strings.Contains(cfg.TOTPIssuer, ":") {
		return fmt.Errorf("second_factor: totp_issuer %q may not contain a colon (the otpauth URI's separator)", cfg.TOTPIssuer)
	}
	for _, sc := range cfg.SecondFactorScopes {
		switch {
		case sc == "openid" || sc == "offline_access":
			return fmt.Errorf("second_factor: scope %q cannot need a second factor: every sign-in asks for it", sc)
		case !slices.Contains(published, sc):
			return fmt.Errorf("second_factor: scope %q is not a published scope", sc)
		}
	}
	return cfg.Lockout.Validate()
}

// totpIssuer is the name of TOTP factors in authenticator apps:
// TOTPIssuer, or the issuer URL's host.
func (cfg Config) totpIssuer() string {
	if cfg.TOTPIssuer != "" {
		return cfg.TOTPIssuer
	}
	if u, err := url.Parse(cfg.Issuer); err == nil && u.Hostname() != "" {
		return u.Hostname()
	}
	return "Gatehouse"
}

// validateIssuer checks that issuer is an absolute http(s) URL without
// user info, query, fragment or trailing slash.
func validateIssuer(issuer string) error {
	if issuer == "" {
		return errors.New("issuer is required")
	}
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(issuer, "/") {
		return fmt.Errorf("issuer %q must be an absolute http(s) URL without user info, query, fragment or trailing slash", issuer)
	}
	return nil
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Audience == "" {
		cfg.Audience = DefaultAudience
	}
	if cfg.AccessTokenLifetime <= 0 {
		cfg.AccessTokenLifetime = DefaultAccessTokenLifetime
	}
	if cfg.IDTokenLifetime <= 0 {
		cfg.IDTokenLifetime = DefaultIDTokenLifetime
	}
	cfg.Refresh = cfg.Refresh.WithDefaults()
	if len(cfg.ScopesSupported) == 0 {
		cfg.ScopesSupported = DefaultScopes
	}
	if cfg.HSTS == "" {
		cfg.HSTS = DefaultHSTS
	}
	if cfg.PurgeInterval == 0 {
		cfg.PurgeInterval = DefaultPurgeInterval
	}
	if cfg.ClientIP == nil {
		cfg.ClientIP = remoteHost
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// remoteHost is the default ClientIP: the host of RemoteAddr.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// KeyRetention is how long a server with cfg keeps a retired key
// published: the longest token it can have signed, plus the verifiers'
// leeway and a margin. Tools that rotate keys in the store without a
// server (`gatehouse keys rotate`) use it. Zero lifetimes count as their
// defaults.
func KeyRetention(cfg Config) time.Duration {
	cfg = cfg.withDefaults()
	longest := max(cfg.AccessTokenLifetime, cfg.IDTokenLifetime)
	for _, c := range cfg.Clients {
		longest = max(longest, c.AccessTokenLifetime)
	}
	return longest + retentionMargin
}

// MaxAccessLifetime is the longest lifetime of an access token a server
// with cfg issues (zero lifetimes count as their defaults): a revocation
// of a family or a subject must last that long.
func MaxAccessLifetime(cfg Config) time.Duration {
	cfg = cfg.withDefaults()
	longest := cfg.AccessTokenLifetime
	for _, c := range cfg.Clients {
		longest = max(longest, c.AccessTokenLifetime)
	}
	return longest
}
