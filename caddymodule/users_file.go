package caddymodule

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
	identityusers "github.com/gatehouse/gatehouse/identity/users"
)

// seedFactors enrols the TOTP factors the users file seeds (totp_secret)
// for the users who have none (factors.Service.Seed). A user of the file
// the store holds under another subject, or not at all (a deleted one), is
// another principal now: it gets nothing, and a warning says so.
func (a *App) seedFactors(ctx context.Context, loaded identityusers.Loaded) error {
	if len(loaded.TOTPSecrets) == 0 {
		return nil
	}
	var enrolled, skipped []string
	for _, listed := range loaded.Users {
		secret, ok := loaded.TOTPSecrets[listed.Username]
		if !ok {
			continue
		}
		u, err := a.store.User(ctx, listed.Username)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && u.Subject != listed.Subject:
			skipped = append(skipped, listed.Username)
			continue
		case err != nil:
			return fmt.Errorf("seeding the TOTP factor of %q: %w", listed.Username, err)
		}
		did, err := a.srv.Factors().Seed(ctx, u, secret)
		if err != nil {
			return fmt.Errorf("seeding the TOTP factor of %q: %w", listed.Username, err)
		}
		if did {
			enrolled = append(enrolled, listed.Username)
		}
	}
	if len(enrolled) > 0 {
		a.logger.Info("users file seeded TOTP factors", zap.String("path", a.UsersFile), zap.Strings("usernames", enrolled))
	}
	if len(skipped) > 0 {
		a.logger.Warn("users file seeds a TOTP factor for users the store does not hold under the file's subject: "+
			"they were not given one", zap.String("path", a.UsersFile), zap.Strings("usernames", skipped))
	}
	return nil
}
