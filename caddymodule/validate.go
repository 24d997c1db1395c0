package caddymodule

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity"
)

// This file holds the glue's own checks of the configuration, run by
// Validate. Caddy provisions a module before it validates it, and
// Provision builds the core packages, which check their own configuration
// first; the checks here restate some of those rules.

// Validate checks the configuration. It changes nothing.
func (a *App) Validate() error {
	if a.Issuer == "" && a.VerifierConfig.remote() {
		if err := a.checkRemoteOnly(); err != nil {
			return err
		}
	} else if err := checkIssuer(a.Issuer); err != nil {
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
	if err := validateAPIResources(a.APIResources, seen); err != nil {
		return err
	}
	return errors.Join(a.Lockout.validate(), a.SigningKeys.validate(), a.VerifierConfig.validate(a.Issuer != ""))
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
		{"refresh_token", a.RefreshToken != nil},
		{"uniform_error_status", a.UniformErrorStatus},
		{"hsts", a.HSTS != ""},
		{"password_hash_concurrency", a.PasswordHashConcurrency != 0},
		{"users_file", a.UsersFile != ""},
		{"clients", len(a.Clients) > 0},
		{"api_resources", len(a.APIResources) > 0},
		{"lockout", a.Lockout != nil},
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

// validate checks l.
func (l *Lockout) validate() error {
	if l == nil {
		return nil
	}
	if err := errors.Join(
		checkDuration("lockout.duration", l.Duration),
		checkDuration("lockout.window", l.Window),
		checkDuration("lockout.base_delay", l.BaseDelay),
		checkDuration("lockout.max_delay", l.MaxDelay),
	); err != nil {
		return err
	}
	if l.ThrottleAfter < 0 {
		return fmt.Errorf("lockout.throttle_after must not be negative, got %d", l.ThrottleAfter)
	}
	if l.BaseDelay > 0 && l.MaxDelay > 0 && l.BaseDelay > l.MaxDelay {
		return fmt.Errorf("lockout: base_delay %v is longer than max_delay %v",
			time.Duration(l.BaseDelay), time.Duration(l.MaxDelay))
	}
	return nil
}

// validate checks k.
func (k *SigningKeys) validate() error {
	if k == nil {
		return nil
	}
	if err := errors.Join(
		checkDuration("signing_keys.announce", k.Announce),
		checkDuration("signing_keys.check_interval", k.CheckInterval),
	); err != nil {
		return err
	}
	period, announce := time.Duration(k.Period), time.Duration(k.Announce)
	if period == 0 {
		period = defaultKeyPeriod
	}
	if announce == 0 {
		announce = defaultKeyAnnounce
	}
	if period > 0 && announce >= period {
		return fmt.Errorf("signing_keys: announce %v must be shorter than period %v", announce, period)
	}
	if k.Bits != 0 && (k.Bits < 2048 || k.Bits > 8192) {
		return fmt.Errorf("signing_keys: bits must be 2048 to 8192, got %d", k.Bits)
	}
	if k.EncryptionKeyEnv != "" && k.EncryptionKeyFile != "" {
		return errors.New("signing_keys: encryption_key_env and encryption_key_file exclude each other")
	}
	return nil
}

// validate checks v; hasIssuer tells whether the app has an issuer.
func (v *VerifierConfig) validate(hasIssuer bool) error {
	if v == nil {
		return nil
	}
	if v.JWKSURL != "" {
		u, err := url.Parse(v.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("verifier: jwks_url %q must be an absolute http(s) URL without user info or fragment", v.JWKSURL)
		}
	}
	if !hasIssuer && v.JWKSURL == "" {
		return errors.New("verifier: jwks_url is required without the app's issuer (remote-only mode)")
	}
	for _, alg := range v.Algorithms {
		if !slices.Contains(verifierAlgorithms, alg) {
			return fmt.Errorf("verifier: algorithm %q is not allowed: only RS, PS and ES algorithms are", alg)
		}
	}
	if slices.Contains(v.Types, "") {
		return errors.New("verifier: empty type")
	}
	if v.Leeway < 0 || time.Duration(v.Leeway) > 5*time.Minute {
		return fmt.Errorf("verifier: leeway %v out of range 0..5m", time.Duration(v.Leeway))
	}
	return nil
}

// verifierAlgorithms are the algorithms the verifier accepts.
var verifierAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

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
