package caddymodule

import (
	"context"
	"fmt"

	"github.com/gatehouse/gatehouse/identity/verify"

	"github.com/gatehouse/gatehouse/internal/contain"
)

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
	cfg := v.verifyConfig(a.Issuer, audience)
	cfg.Logger = a.logger.Named("verifier")
	if v.remote() {
		remote, err := verify.NewRemoteKeySet(ctx, verify.RemoteConfig{URL: v.JWKSURL, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("verifier: %w", err)
		}
		a.remote, cfg.Keys = remote, remote
		a.loops.Add(1)
		contain.Go(a.logger, "verifier.jwks", func() {
			defer a.loops.Done()
			contain.Loop(ctx, a.logger, "verifier.jwks", remote.Run)
		}, nil)
	} else {
		cfg.Keys = a.srv.Keys()
	}
	if v.checksRevocations() {
		cfg.Revocations = a.store
	}
	verifier, err := verify.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("building the access-token verifier: %w", err)
	}
	a.verifier = verifier
	a.loops.Add(1)
	contain.Go(a.logger, "verifier.revocations", func() {
		defer a.loops.Done()
		contain.Loop(ctx, a.logger, "verifier.revocations", verifier.Run)
	}, nil)
	return nil
}

// Verifier returns the access-token check of protected routes; nil before
// Provision and after Cleanup.
func (a *App) Verifier() *verify.Verifier { return a.verifier }

// serverVerifier is the identity server's own verifier, nil without one.
func (a *App) serverVerifier() *verify.Verifier {
	if a.srv == nil {
		return nil
	}
	return a.srv.Verifier()
}
