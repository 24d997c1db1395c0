package identity

import (
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Grant types (RFC 6749 §4, RFC 8628).
const (
	GrantPassword          = "password"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	GrantAuthorizationCode = "authorization_code"
	GrantImplicit          = "implicit"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// Scopes with a meaning to the server itself.
const (
	ScopeOpenID        = "openid"
	ScopeProfile       = "profile"
	ScopeEmail         = "email"
	ScopeRoles         = "roles"
	ScopeOfflineAccess = "offline_access"
)

// Config configures a Server. Zero values take the defaults named per field.
type Config struct {
	// Issuer is the absolute base URL of the identity server, e.g.
	// "https://auth.example.com" (no trailing slash). Required. Endpoint
	// URLs are built under it, and its path prefixes every endpoint path.
	Issuer string
	// Audience is the "aud" of every access token. Default "gatehouse".
	Audience string
	// AccessTokenLifetime is the default lifetime of access tokens.
	// Default 1h.
	AccessTokenLifetime time.Duration
	// IDTokenLifetime is the lifetime of ID tokens. Default 5m.
	IDTokenLifetime time.Duration
	// Refresh is the default refresh-token policy.
	Refresh RefreshPolicy
	// Clients are the registered clients.
	Clients []Client
	// ScopesSupported is the list published in discovery. Default: the
	// scopes of the interface (openid, profile, email, roles,
	// Identity/Admin, Service/Market, Service/News, Service/Trading,
	// Service/OrderPad, Service/Admin, offline_access).
	ScopesSupported []string
	// UniformErrorStatus makes every token-endpoint error answer 400, as
	// IdentityServer does, instead of RFC 6749's 401 for a failed client
	// authentication through the Authorization header.
	UniformErrorStatus bool
	// HSTS is the Strict-Transport-Security value sent on token responses.
	// Default "max-age=31536000".
	HSTS string
	// PasswordHashConcurrency bounds how many password hashes are checked
	// at once. Default: the number of CPUs.
	PasswordHashConcurrency int
	// Keys is the signing-key lifecycle and its encryption at rest.
	Keys KeyPolicy
	// Lockout is the brute-force defence of the password grant.
	Lockout LockoutPolicy
	// ClientIP returns the request's source address, e.g. Caddy's client
	// IP (which honours trusted_proxies). Default: the host of RemoteAddr.
	ClientIP func(*http.Request) string
	// Metrics receives counts for monitoring. Default: none.
	Metrics Metrics
	// APIResources are the APIs that may call the introspection endpoint
	// for tokens of their audience, authenticating with their name and
	// secret (client_secret_basic or _post), as IdentityServer's API
	// resources do.
	APIResources []APIResource

	// Logger receives operational logs. Default: a no-op logger.
	Logger *zap.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RefreshPolicy says how refresh tokens live.
type RefreshPolicy struct {
	// Grace is how long after a rotation the same parent, sent again by
	// the same client before its successor was used, gets the same
	// successor instead of revoking the family. Default 5s; negative
	// disables the grace window.
	Grace time.Duration
	// SlidingLifetime is how long a refresh token stays valid unused; each
	// refresh issues a token valid this long (never past the absolute
	// lifetime). Default 15 days (360h).
	SlidingLifetime time.Duration
	// AbsoluteLifetime is how long a family lives from the original grant,
	// however often it is refreshed. Default 30 days (720h).
	AbsoluteLifetime time.Duration
}

// Client is a registered OAuth client.
type Client struct {
	// ID is the client_id.
	ID string
	// Name is a display name. Optional.
	Name string
	// Public marks a client without a secret (a native or browser app):
	// it sends only client_id.
	Public bool
	// SecretHashes are SHA-256 digests of the client's secrets (several
	// allow a rotation). A confidential client needs at least one.
	SecretHashes [][]byte
	// GrantTypes are the grant types the client may use.
	GrantTypes []string
	// Scopes are the scopes the client may request.
	Scopes []string
	// DefaultScopes are granted when a request names no scope. Default:
	// every scope in Scopes (filtered by what the user may hold).
	DefaultScopes []string
	// AccessTokenLifetime overrides Config.AccessTokenLifetime. 0: default.
	AccessTokenLifetime time.Duration
	// Refresh overrides fields of Config.Refresh that are non-zero.
	Refresh RefreshPolicy
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the token endpoint with CORS. "*" allows any origin.
	AllowedOrigins []string
	// RedirectURIs are the registered redirect URIs (browser flows).
	RedirectURIs []string
	// Introspect allows the client to call the introspection endpoint.
	Introspect bool
}

// APIResource is an API that may introspect the access tokens issued for
// it (whose "aud" holds its name).
type APIResource struct {
	// Name is the audience the API's tokens carry and its login name.
	Name string
	// SecretHashes are SHA-256 digests of the API's secrets.
	SecretHashes [][]byte
}

// LockoutPolicy is the brute-force defence (DESIGN.md, "Token rules"): a
// (user, source) pair is locked after MaxFailures failures inside Window,
// for Duration; failures per source and per user beyond ThrottleAfter
// slow every later attempt for that source or user (up to MaxDelay), but
// never lock anyone out.
type LockoutPolicy struct {
	// MaxFailures locks a (user, source) pair. Default 5; negative
	// disables lockout and throttling.
	MaxFailures int
	// Duration is how long a lockout lasts. Default 15m.
	Duration time.Duration
	// Window is how long failures are remembered. Default 15m.
	Window time.Duration
	// ThrottleAfter is how many failures per source or per user pass
	// without delay. Default 3.
	ThrottleAfter int
	// BaseDelay is the first delay; each further failure doubles it.
	// Default 250ms.
	BaseDelay time.Duration
	// MaxDelay caps the delay. Default 3s.
	MaxDelay time.Duration
}

// Metrics receives the server's counts; caddymodule exports them to
// Prometheus. Labels are bounded: client ids only of configured clients.
type Metrics interface {
	// TokenIssued counts a token response by grant type and client.
	TokenIssued(grant, clientID string)
	// TokenFailed counts a failed token-endpoint request by error code.
	TokenFailed(code string)
	// Lockout counts a (user, source) pair locked out.
	Lockout()
}
