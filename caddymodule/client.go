package caddymodule

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity"
)

// Client is a registered OAuth client.
type Client struct {
	// ID is the client_id. Required, unique.
	ID string `json:"id,omitempty"`

	// Name is a display name. Optional.
	Name string `json:"name,omitempty"`

	// Public marks a client that cannot keep a secret (a native or browser
	// app): it sends its client_id alone and must have no secret. Default
	// false: a confidential client, which authenticates with a secret on
	// every token request.
	Public bool `json:"public,omitempty"`

	// SecretSHA256 are the SHA-256 digests of the client's secrets, each as
	// 64 hex digits (as `gatehouse client secret` prints it) or as the
	// base64 of the digest (as IdentityServer's Sha256() prints it). Several
	// allow a rotation. A confidential client needs at least one. Generate
	// secrets with `gatehouse client secret`: the digest is fast to check,
	// so a low-entropy secret could be guessed from a leaked digest.
	SecretSHA256 []string `json:"secret_sha256,omitempty"`

	// GrantTypes are the grant types the client may use: password,
	// refresh_token, client_credentials, authorization_code, implicit,
	// urn:ietf:params:oauth:grant-type:device_code. Default: none.
	GrantTypes []string `json:"grant_types,omitempty"`

	// Scopes are the scopes the client may request. Default: none.
	Scopes []string `json:"scopes,omitempty"`

	// DefaultScopes are granted when a request names no scope; each must be
	// among Scopes. Default: all of Scopes (filtered by what the user may
	// hold).
	DefaultScopes []string `json:"default_scopes,omitempty"`

	// AccessTokenLifetime overrides the app's access_token_lifetime for
	// this client. Default: the app's.
	AccessTokenLifetime caddy.Duration `json:"access_token_lifetime,omitempty"`

	// RefreshToken overrides the fields of the app's refresh-token policy
	// that it sets. Default: the app's.
	RefreshToken *RefreshToken `json:"refresh_token,omitempty"`

	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the token, revocation and userinfo endpoints with CORS. "*"
	// allows any origin. Default: none (no CORS).
	AllowedOrigins []string `json:"allowed_origins,omitempty"`

	// RedirectURIs are the registered redirect URIs of browser flows. A
	// loopback http://127.0.0.1/... URI matches any port (RFC 8252 §7.3).
	// Default: none.
	RedirectURIs []string `json:"redirect_uris,omitempty"`

	// Introspect allows the client to call the introspection endpoint.
	// Default false.
	Introspect bool `json:"introspect,omitempty"`
}

// RefreshToken is a refresh-token policy.
type RefreshToken struct {
	// Grace is how long after a rotation the same parent token, sent again
	// by the same client before its successor was used, gets the same
	// successor instead of revoking the token family (a concurrent refresh
	// by two tabs or a retried request). Default 5s. A negative value
	// disables the window. A longer window gives a replayed stolen token
	// more time.
	Grace caddy.Duration `json:"grace,omitempty"`

	// SlidingLifetime is how long a refresh token stays valid unused; each
	// refresh issues one valid this long again, never past the absolute
	// lifetime. Default 15 days.
	SlidingLifetime caddy.Duration `json:"sliding_lifetime,omitempty"`

	// AbsoluteLifetime is how long a token family lives from the original
	// login, however often it is refreshed: after it the user logs in
	// again. Default 30 days.
	AbsoluteLifetime caddy.Duration `json:"absolute_lifetime,omitempty"`
}

// APIResource is an API that may call the introspection endpoint for the
// access tokens issued for it, as IdentityServer's API resources do.
type APIResource struct {
	// Name is the audience of the API's tokens and the name it logs in
	// with (client_secret_basic or client_secret_post). Required, unique,
	// and not the id of a client. It sees only tokens whose "aud" holds it.
	Name string `json:"name,omitempty"`

	// SecretSHA256 are the SHA-256 digests of the API's secrets, in the
	// forms of a client's secret_sha256; several allow a rotation. At least
	// one is required. Generate secrets with `gatehouse client secret`.
	SecretSHA256 []string `json:"secret_sha256,omitempty"`
}

// identityResource converts r.
func (r *APIResource) identityResource() (identity.APIResource, error) {
	hashes := make([][]byte, 0, len(r.SecretSHA256))
	for _, s := range r.SecretSHA256 {
		h, err := parseSecretDigest(s)
		if err != nil {
			return identity.APIResource{}, fmt.Errorf("api_resource %q: secret_sha256: %w", r.Name, err)
		}
		hashes = append(hashes, h)
	}
	return identity.APIResource{Name: r.Name, SecretHashes: hashes}, nil
}

// validateAPIResources checks the API resources; clients holds the client
// ids, which they must not reuse.
func validateAPIResources(list []APIResource, clients map[string]bool) error {
	seen := make(map[string]bool, len(list))
	for i, r := range list {
		switch {
		case r.Name == "":
			return fmt.Errorf("api_resource %d: name is required", i)
		case seen[r.Name]:
			return fmt.Errorf("api_resource %q: name used twice", r.Name)
		case clients[r.Name]:
			return fmt.Errorf("api_resource %q: a client has the same id", r.Name)
		case len(r.SecretSHA256) == 0:
			return fmt.Errorf("api_resource %q: secret_sha256 is required", r.Name)
		}
		seen[r.Name] = true
		if _, err := r.identityResource(); err != nil {
			return err
		}
	}
	return nil
}

// knownGrants are the grant types a client may name.
var knownGrants = []string{
	identity.GrantPassword,
	identity.GrantRefreshToken,
	identity.GrantClientCredentials,
	identity.GrantAuthorizationCode,
	identity.GrantImplicit,
	identity.GrantDeviceCode,
}

// policy converts r; nil is the zero policy (all defaults).
func (r *RefreshToken) policy() identity.RefreshPolicy {
	if r == nil {
		return identity.RefreshPolicy{}
	}
	return identity.RefreshPolicy{
		Grace:            time.Duration(r.Grace),
		SlidingLifetime:  time.Duration(r.SlidingLifetime),
		AbsoluteLifetime: time.Duration(r.AbsoluteLifetime),
	}
}

// validate checks r; prefix names where it sits.
func (r *RefreshToken) validate(prefix string) error {
	if r == nil {
		return nil
	}
	if err := errors.Join(
		checkDuration(prefix+"refresh_token.sliding_lifetime", r.SlidingLifetime),
		checkDuration(prefix+"refresh_token.absolute_lifetime", r.AbsoluteLifetime),
	); err != nil {
		return err
	}
	if r.SlidingLifetime > 0 && r.AbsoluteLifetime > 0 && r.SlidingLifetime > r.AbsoluteLifetime {
		return fmt.Errorf("%srefresh_token: sliding_lifetime %v is longer than absolute_lifetime %v",
			prefix, time.Duration(r.SlidingLifetime), time.Duration(r.AbsoluteLifetime))
	}
	return nil
}

// validate checks c, except for the uniqueness of its id.
func (c *Client) validate() error {
	prefix := fmt.Sprintf("client %q: ", c.ID)
	switch {
	case c.Public && len(c.SecretSHA256) > 0:
		return fmt.Errorf("%sa public client has no secret_sha256", prefix)
	case !c.Public && len(c.SecretSHA256) == 0:
		return fmt.Errorf("%sa confidential client needs a secret_sha256 (or mark it public)", prefix)
	}
	for _, s := range c.SecretSHA256 {
		if _, err := parseSecretDigest(s); err != nil {
			return fmt.Errorf("%ssecret_sha256: %w", prefix, err)
		}
	}
	for _, g := range c.GrantTypes {
		if !slices.Contains(knownGrants, g) {
			return fmt.Errorf("%sunknown grant type %q", prefix, g)
		}
	}
	if c.Public && slices.Contains(c.GrantTypes, identity.GrantClientCredentials) {
		return fmt.Errorf("%sa public client cannot use client_credentials", prefix)
	}
	for _, s := range c.DefaultScopes {
		if !slices.Contains(c.Scopes, s) {
			return fmt.Errorf("%sdefault scope %q is not among its scopes", prefix, s)
		}
	}
	if err := checkDuration(prefix+"access_token_lifetime", c.AccessTokenLifetime); err != nil {
		return err
	}
	return c.RefreshToken.validate(prefix)
}

// identityClient converts c.
func (c *Client) identityClient() (identity.Client, error) {
	hashes := make([][]byte, 0, len(c.SecretSHA256))
	for _, s := range c.SecretSHA256 {
		h, err := parseSecretDigest(s)
		if err != nil {
			return identity.Client{}, fmt.Errorf("client %q: secret_sha256: %w", c.ID, err)
		}
		hashes = append(hashes, h)
	}
	return identity.Client{
		ID:                  c.ID,
		Name:                c.Name,
		Public:              c.Public,
		SecretHashes:        hashes,
		GrantTypes:          c.GrantTypes,
		Scopes:              c.Scopes,
		DefaultScopes:       c.DefaultScopes,
		AccessTokenLifetime: time.Duration(c.AccessTokenLifetime),
		Refresh:             c.RefreshToken.policy(),
		AllowedOrigins:      c.AllowedOrigins,
		RedirectURIs:        c.RedirectURIs,
		Introspect:          c.Introspect,
	}, nil
}

// parseSecretDigest decodes a SHA-256 digest written as 64 hex digits or as
// base64 (standard alphabet, padded or not).
func parseSecretDigest(s string) ([]byte, error) {
	if len(s) == 2*sha256.Size {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%q is neither 64 hex digits nor the base64 of a SHA-256 digest", s)
	}
	return b, nil
}

// checkIssuer checks that issuer is an absolute http(s) URL without query,
// fragment, user info or trailing slash.
func checkIssuer(issuer string) error {
	if issuer == "" {
		return errors.New("issuer is required")
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("issuer %q: %w", issuer, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || strings.HasSuffix(issuer, "/") {
		return fmt.Errorf("issuer %q must be an absolute http(s) URL without user info, query, fragment or trailing slash", issuer)
	}
	return nil
}

// checkDuration checks that the duration called name is not negative (zero
// means the default).
func checkDuration(name string, d caddy.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s must be positive, got %v", name, time.Duration(d))
	}
	return nil
}
