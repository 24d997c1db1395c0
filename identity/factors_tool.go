package identity

import (
	"fmt"

	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// NewFactors is the second-factor service a server with cfg has, on st,
// for the tools that change factors without a server (`gatehouse user
// mfa`): the same issuer name, the same key encryption key and the same
// brute-force policy. It records nothing in the audit chain (cfg.Audit is
// the server's).
func NewFactors(cfg Config, st store.Store) (*factors.Service, error) {
	checker, err := users.NewChecker(users.CheckerConfig{Store: st, Lockout: cfg.Lockout, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("second factors: %w", err)
	}
	return factors.New(factors.Config{
		Store: st, Checker: checker, Issuer: cfg.totpIssuer(), KEK: cfg.Keys.EncryptionKey, Now: cfg.Now,
	})
}
