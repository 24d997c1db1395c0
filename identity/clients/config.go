package clients

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Defaults of RefreshPolicy.
const (
	DefaultRefreshGrace            = 5 * time.Second
	DefaultRefreshSlidingLifetime  = 15 * 24 * time.Hour
	DefaultRefreshAbsoluteLifetime = 30 * 24 * time.Hour
	DefaultRefreshMaxPerUser       = 100
)

// MaxRefreshMaxPerUser is the highest RefreshPolicy.MaxPerUser.
const MaxRefreshMaxPerUser = 10000

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
	// MaxPerUser is the most refresh-token families one user holds with
	// one client at once: a grant past it removes the user's oldest
	// family with that client, whose refresh token then fails with
	// invalid_grant (the access tokens issued from it run to their
	// expiry). Default 100, at most MaxRefreshMaxPerUser.
	MaxPerUser int
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p RefreshPolicy) WithDefaults() RefreshPolicy {
	if p.Grace == 0 {
		p.Grace = DefaultRefreshGrace
	}
	if p.SlidingLifetime <= 0 {
		p.SlidingLifetime = DefaultRefreshSlidingLifetime
	}
	if p.AbsoluteLifetime <= 0 {
		p.AbsoluteLifetime = DefaultRefreshAbsoluteLifetime
	}
	if p.MaxPerUser <= 0 {
		p.MaxPerUser = DefaultRefreshMaxPerUser
	}
	return p
}

// Validate checks p; zero fields take defaults.
func (p RefreshPolicy) Validate() error {
	if p.SlidingLifetime < 0 || p.AbsoluteLifetime < 0 {
		return errors.New("refresh-token lifetimes must not be negative")
	}
	if p.SlidingLifetime > 0 && p.AbsoluteLifetime > 0 && p.SlidingLifetime > p.AbsoluteLifetime {
		return fmt.Errorf("refresh-token sliding lifetime %v exceeds the absolute lifetime %v", p.SlidingLifetime, p.AbsoluteLifetime)
	}
	if p.MaxPerUser < 0 || p.MaxPerUser > MaxRefreshMaxPerUser {
		return fmt.Errorf("refresh tokens per user must be between 1 and %d, got %d", MaxRefreshMaxPerUser, p.MaxPerUser)
	}
	return nil
}

// override returns p with the non-zero fields of o.
func (p RefreshPolicy) override(o RefreshPolicy) RefreshPolicy {
	if o.Grace != 0 {
		p.Grace = o.Grace
	}
	if o.SlidingLifetime > 0 {
		p.SlidingLifetime = o.SlidingLifetime
	}
	if o.AbsoluteLifetime > 0 {
		p.AbsoluteLifetime = o.AbsoluteLifetime
	}
	if o.MaxPerUser > 0 {
		p.MaxPerUser = o.MaxPerUser
	}
	return p
}

// Config is a registered OAuth client.
type Config struct {
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
	// DefaultScopes are granted when a request names no scope. Default
	// (nil): every scope in Scopes (filtered by what the user may hold). An
	// empty list that is not nil is refused.
	DefaultScopes []string
	// Entitlements are the market-data pairs of a client_credentials
	// client: its tokens carry them (or fewer, when asked). Only a client
	// with that grant may have them, at most what fits in a token.
	Entitlements entitle.Set
	// AccessTokenLifetime overrides the server's access-token lifetime.
	// 0: the server's.
	AccessTokenLifetime time.Duration
	// Refresh overrides fields of the server's refresh policy that are
	// non-zero.
	Refresh RefreshPolicy
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the token endpoint with CORS. "*" allows any origin.
	AllowedOrigins []string
	// RedirectURIs are the registered redirect URIs (browser flows),
	// matched exactly, except that the port of a loopback IP literal
	// (http://127.0.0.1, http://[::1]) is ignored (MatchRedirectURI).
	RedirectURIs []string
	// Introspect allows the client to call the introspection endpoint.
	Introspect bool
	// RequireConsent shows the user the consent page before the client
	// gets anything through the authorization endpoint; the answer is
	// remembered per user and client, for the scopes allowed.
	RequireConsent bool
	// AllowPlainPKCE lets the client send code_challenge_method=plain;
	// otherwise only S256 is accepted.
	AllowPlainPKCE bool
	// AllowHTTPRedirect lets RedirectURIs use plain http to a host other
	// than loopback. Otherwise such a URI is refused: the codes and tokens
	// sent to it would travel in the clear (RFC 9700 §2.1, RFC 8252 §7.3).
	AllowHTTPRedirect bool
	// PostLogoutRedirectURIs are where the end-session endpoint may send
	// the browser back after a logout the client started, matched exactly
	// (no loopback port exception: a logout redirect carries nothing to
	// protect, but an open redirect would be one).
	PostLogoutRedirectURIs []string
	// FrontchannelLogoutURI is loaded in an iframe of the logged-out page
	// when a session the client joined ends (OpenID Connect Front-Channel
	// Logout 1.0). Optional.
	FrontchannelLogoutURI string
	// FrontchannelLogoutSessionRequired adds iss and sid to the
	// front-channel logout URI's query.
	FrontchannelLogoutSessionRequired bool
	// BackchannelLogoutURI receives a logout token, POSTed by the server,
	// when a session the client joined ends (OpenID Connect Back-Channel
	// Logout 1.0). Optional. The token always carries both sid and sub.
	BackchannelLogoutURI string
	// LogoutRevokesRefresh revokes, when a session ends by logout, the
	// refresh-token families the client got through that session (and
	// the access tokens issued from them). Default false: offline access
	// outlives the browser session, as offline_access intends.
	LogoutRevokesRefresh bool
	// RequestObjectJWKS is a JWK Set (JSON) of the public keys the client
	// signs request objects with (OpenID Connect Core §6.1; RS256 or
	// ES256). Without it only unsigned request objects are accepted.
	RequestObjectJWKS []byte
	// AccessTokenSigningAlg is the "alg" of the client's access tokens:
	// RS256, ES256 or EdDSA, one the server keeps signing keys for. A
	// property of this server's (no registration standard names one):
	// every resource that checks the client's tokens must accept the
	// algorithm. Default: the server's first signing algorithm (RS256
	// unless configured).
	AccessTokenSigningAlg string
	// IDTokenSignedResponseAlg is the "alg" of the client's ID tokens
	// (OpenID Connect Dynamic Client Registration 1.0 §2,
	// id_token_signed_response_alg): RS256, ES256 or EdDSA, one the
	// server keeps signing keys for; never "none". Default: the server's
	// first signing algorithm.
	IDTokenSignedResponseAlg string
}

// SigningAlgorithms are the values AccessTokenSigningAlg and
// IDTokenSignedResponseAlg may take (the algorithms of package keys).
var SigningAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// Validate checks the client's own rules.
func (c *Config) Validate() error {
	if c.ID == "" {
		return errors.New("client with an empty id")
	}
	if c.Public && len(c.SecretHashes) > 0 {
		return fmt.Errorf("client %q: a public client has no secret", c.ID)
	}
	if !c.Public && len(c.SecretHashes) == 0 {
		return fmt.Errorf("client %q: a confidential client needs a secret", c.ID)
	}
	for _, h := range c.SecretHashes {
		if len(h) != sha256.Size {
			return fmt.Errorf("client %q: a secret hash must be a SHA-256 digest", c.ID)
		}
	}
	for _, g := range c.GrantTypes {
		if !oauth.KnownGrant(g) {
			return fmt.Errorf("client %q: unknown grant type %q", c.ID, g)
		}
		if c.Public && g == oauth.GrantClientCredentials {
			return fmt.Errorf("client %q: a public client cannot use client_credentials", c.ID)
		}
	}
	for _, s := range c.Scopes {
		if _, err := oauth.ParseScope(s); err != nil || s == "" {
			return fmt.Errorf("client %q: scope %q is not a scope token", c.ID, s)
		}
	}
	if c.DefaultScopes != nil && len(c.DefaultScopes) == 0 {
		// An empty list given (JSON's []) would read as "none" and act as
		// the default, every scope.
		return fmt.Errorf("client %q: default scopes given but empty: leave them out for every scope of the client, or name at least one", c.ID)
	}
	for _, s := range c.DefaultScopes {
		if !contains(c.Scopes, s) {
			return fmt.Errorf("client %q: default scope %q is not among its scopes", c.ID, s)
		}
	}
	if !c.Entitlements.IsEmpty() && !contains(c.GrantTypes, oauth.GrantClientCredentials) {
		return fmt.Errorf("client %q: entitlements are a client_credentials client's (a user's come from the store): give it that grant or leave them out", c.ID)
	}
	if err := c.Entitlements.CheckTokenSize(); err != nil {
		return fmt.Errorf("client %q: entitlements: %w", c.ID, err)
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		if err := checkOrigin(o); err != nil {
			return fmt.Errorf("client %q: allowed origin: %w", c.ID, err)
		}
	}
	for _, r := range c.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return fmt.Errorf("client %q: redirect URI %w", c.ID, err)
		}
		if !c.AllowHTTPRedirect && plainHTTPElsewhere(r) {
			return fmt.Errorf("client %q: redirect URI %q is plain http to a host other than loopback: codes and tokens would travel in the clear (use https, or allow_http_redirect)", c.ID, r)
		}
	}
	for _, u := range c.PostLogoutRedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return fmt.Errorf("client %q: post-logout redirect URI %w", c.ID, err)
		}
	}
	for _, u := range []string{c.FrontchannelLogoutURI, c.BackchannelLogoutURI} {
		if u == "" {
			continue
		}
		if err := checkLogoutURI(u); err != nil {
			return fmt.Errorf("client %q: logout URI %w", c.ID, err)
		}
	}
	if len(c.RequestObjectJWKS) > 0 {
		if _, err := requestKeys(c.RequestObjectJWKS); err != nil {
			return fmt.Errorf("client %q: request object keys: %w", c.ID, err)
		}
	}
	if c.AccessTokenLifetime < 0 {
		return fmt.Errorf("client %q: access-token lifetime must not be negative", c.ID)
	}
	for _, alg := range []string{c.AccessTokenSigningAlg, c.IDTokenSignedResponseAlg} {
		if alg != "" && !contains(SigningAlgorithms, alg) {
			return fmt.Errorf("client %q: signing algorithm %q is not one of %v", c.ID, alg, SigningAlgorithms)
		}
	}
	if err := c.Refresh.Validate(); err != nil {
		return fmt.Errorf("client %q: %w", c.ID, err)
	}
	return nil
}

// APIResource is an API that may introspect the access tokens issued for
// it (whose "aud" holds its name).
type APIResource struct {
	// Name is the audience the API's tokens carry and its login name.
	Name string
	// SecretHashes are SHA-256 digests of the API's secrets.
	SecretHashes [][]byte
}

// Validate checks the resource's own rules.
func (r *APIResource) Validate() error {
	if r.Name == "" {
		return errors.New("API resource with an empty name")
	}
	if len(r.SecretHashes) == 0 {
		return fmt.Errorf("API resource %q needs a secret", r.Name)
	}
	for _, h := range r.SecretHashes {
		if len(h) != sha256.Size {
			return fmt.Errorf("API resource %q: a secret hash must be a SHA-256 digest", r.Name)
		}
	}
	return nil
}

// ValidateAll checks clients and resources together: each on its own,
// ids unique, and no resource named like a client.
func ValidateAll(clients []Config, resources []APIResource) error {
	ids := make(map[string]bool, len(clients))
	for i := range clients {
		if err := clients[i].Validate(); err != nil {
			return err
		}
		if ids[clients[i].ID] {
			return fmt.Errorf("client %q registered twice", clients[i].ID)
		}
		ids[clients[i].ID] = true
	}
	names := make(map[string]bool, len(resources))
	for i := range resources {
		r := &resources[i]
		if err := r.Validate(); err != nil {
			return err
		}
		if names[r.Name] {
			return fmt.Errorf("API resource %q registered twice", r.Name)
		}
		if ids[r.Name] {
			return fmt.Errorf("API resource %q has the name of a client", r.Name)
		}
		names[r.Name] = true
	}
	return nil
}

// checkOrigin accepts a serialized origin: scheme://host[:port], nothing more.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
	}
	return nil
}

// checkLogoutURI accepts an absolute http(s) URI without a fragment, as
// the logout specifications require of front- and back-channel URIs.
func checkLogoutURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute http(s) URI without a fragment", raw)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
