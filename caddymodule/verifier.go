package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// VerifierConfig configures the app's access-token check: the one that
// gatehouse_auth uses to protect routes. Every check pins the algorithms,
// the "typ", the issuer and the audience, requires "exp", and takes keys
// only from the configured key set, never from the token.
type VerifierConfig struct {
	// Issuer is the "iss" tokens must carry. Default: the app's issuer.
	// Required when the app has no issuer (remote-only mode).
	Issuer string `json:"issuer,omitempty"`

	// Audience is the audience "aud" must contain. Default: the app's
	// audience ("gatehouse" unless set).
	Audience string `json:"audience,omitempty"`

	// JWKSURL is the URL of the key set of another issuer (remote mode):
	// its keys are fetched, cached, refreshed every 5 minutes and when a
	// token names a key id not seen yet (at most every 5 seconds). Default:
	// none, the keys of the app's own identity server, read in-process with
	// no HTTP hop. Use https outside a loopback or private network: whoever
	// can change the key set can forge tokens.
	JWKSURL string `json:"jwks_url,omitempty"`

	// Algorithms are the accepted "alg" values; only asymmetric ones (RS,
	// PS, ES) may be named. Default ["RS256"].
	Algorithms []string `json:"algorithms,omitempty"`

	// Types are the accepted "typ" header values (compared
	// case-insensitively, an "application/" prefix allowed). Default
	// ["at+jwt"] (RFC 9068). Accepting "JWT" lets ID tokens pass as access
	// tokens.
	Types []string `json:"types,omitempty"`

	// Leeway is the clock skew allowed on exp, nbf and iat, at most 5m.
	// Default 10s.
	Leeway caddy.Duration `json:"leeway,omitempty"`

	// CacheSize bounds the cache of verified tokens, in entries. Default
	// 10000; negative disables the cache.
	CacheSize int `json:"cache_size,omitempty"`

	// CheckRevocations refuses tokens revoked through the revocation
	// endpoint (or by a refresh-token replay), read from the app's store
	// every 5 seconds. Default true for the app's own tokens, false in
	// remote mode, where it reads this app's store: enable it only when
	// that store is the one the remote issuer writes (a shared store).
	CheckRevocations *bool `json:"check_revocations,omitempty"`
}

// remote reports whether v reads a remote key set.
func (v *VerifierConfig) remote() bool { return v != nil && v.JWKSURL != "" }

// checksRevocations reports whether v applies revocations.
func (v *VerifierConfig) checksRevocations() bool {
	if v != nil && v.CheckRevocations != nil {
		return *v.CheckRevocations
	}
	return !v.remote()
}

// custom reports whether v asks for a check other than the identity
// server's own (its issuer and audience, the defaults, revocations).
func (v *VerifierConfig) custom(issuer, audience string) bool {
	if v == nil {
		return false
	}
	return v.remote() || (v.Issuer != "" && v.Issuer != issuer) || (v.Audience != "" && v.Audience != audience) ||
		len(v.Algorithms) > 0 || len(v.Types) > 0 || v.Leeway != 0 || v.CacheSize != 0 || !v.checksRevocations()
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

// buildVerifier builds the app's verifier, and the remote key set it
// reads in remote mode; their background loops run until ctx ends.
func (a *App) buildVerifier(ctx context.Context) error {
	audience := a.Audience
	if audience == "" {
		audience = verify.DefaultAudience
	}
	v := a.VerifierConfig
	if a.srv != nil && !v.custom(a.Issuer, audience) {
		// The identity server's own check: no second cache, and its
		// revocations apply at once on this instance.
		a.verifier = a.srv.Verifier()
		return nil
	}
	cfg := verify.Config{
		Issuer:   a.Issuer,
		Audience: audience,
		Logger:   a.logger.Named("verifier"),
	}
	if v != nil {
		if v.Issuer != "" {
			cfg.Issuer = v.Issuer
		}
		if v.Audience != "" {
			cfg.Audience = v.Audience
		}
		cfg.Algorithms, cfg.Types = v.Algorithms, v.Types
		cfg.Leeway, cfg.CacheSize = time.Duration(v.Leeway), v.CacheSize
	}
	if v.remote() {
		remote, err := verify.NewRemoteKeySet(ctx, verify.RemoteConfig{URL: v.JWKSURL, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("verifier: %w", err)
		}
		a.remote, cfg.Keys = remote, remote
		a.loops.Go(func() { remote.Run(ctx) })
	} else {
		cfg.Keys = a.srv
	}
	if v.checksRevocations() {
		cfg.Revocations = a.store
	}
	verifier, err := verify.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("building the access-token verifier: %w", err)
	}
	a.verifier = verifier
	a.loops.Go(func() { verifier.Run(ctx) })
	return nil
}
