package identity

import (
	"context"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// NewFactors is the second-factor service a server with cfg has, on st,
// for the tools that change factors without a server (`gatehouse user
// mfa`): the same issuer name, the same key encryption key and the same
// brute-force policy. A reset ends the user's sessions and tokens, as the
// server's does, with a revocation that lasts revokeFor (the longest
// access token a server of the store may have issued, and the verifiers'
// leeway). It records nothing in the audit chain (cfg.Audit is the
// server's).
func NewFactors(cfg Config, st store.Store, revokeFor time.Duration) (*factors.Service, error) {
	checker, err := users.NewChecker(users.CheckerConfig{Store: st, Lockout: cfg.Lockout, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("second factors: %w", err)
	}
	return factors.New(factors.Config{
		Store: st, Checker: checker, Issuer: cfg.totpIssuer(), KEK: cfg.Keys.EncryptionKey, Now: cfg.Now,
		Revoke: func(ctx context.Context, subject string) error {
			// Taken once the factors are gone, as the user commands take it.
			now := time.Now()
			return st.RevokeSubject(ctx, subject, now, now.Add(revokeFor))
		},
	})
}
