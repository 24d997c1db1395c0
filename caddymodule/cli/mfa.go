package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/factors"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// mfaActions are the actions of `gatehouse user mfa`; the first is the
// default.
var mfaActions = []string{"show", "reset", "recovery-codes"}

// setUpMFACommand adds `user mfa` to cmd.
func setUpMFACommand(cmd *cobra.Command) {
	cmd.AddCommand(&cobra.Command{
		Use:   "mfa <username> [show|reset|recovery-codes]",
		Short: "Shows a user's second factors, removes them (a lost phone), or makes new recovery codes",
		Long: `Shows, resets or renews a user's second factors.

  show            whether the user has a TOTP factor and since when, how many
                  passkeys, and how many recovery codes are left (never the
                  secret); the default
  reset           removes the user's TOTP factor and recovery codes (not its
                  passkeys, which the user removes on the account page), for a
                  lost phone, and ends the user's sessions and tokens, as a
                  removal on the account page does (a session or token that
                  passed the lost factor keeps none of what it gave). Until a
                  factor is enrolled again the user signs in with the password
                  alone and gets no scope that needs a second factor. A users
                  file that seeds the user a totp_secret enrols it again at
                  the next start: the command warns of it
  recovery-codes  replaces the user's recovery codes with a new set, printed
                  once (the store keeps their hashes only); each stands in for
                  a second factor once, so the user needs one (TOTP or a
                  passkey)`,
		Args:      cobra.RangeArgs(1, 2),
		ValidArgs: mfaActions,
		RunE:      runUserMFA,
	})
}

func runUserMFA(cmd *cobra.Command, args []string) error {
	username, action := args[0], mfaActions[0]
	if len(args) == 2 {
		action = args[1]
	}
	switch action {
	case "show", "reset", "recovery-codes":
	default:
		return fmt.Errorf("unknown action %q: show, reset or recovery-codes", action)
	}
	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	cfg, err := app.IdentityConfig()
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := cmd.Context()
	u, err := st.User(ctx, username)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no user %q", username)
	}
	if err != nil {
		return err
	}
	fs, err := identity.NewFactors(cfg, st, sessionsLifetime(app))
	if err != nil {
		return err
	}
	status, err := fs.Status(ctx, u.Subject)
	if err != nil {
		return err
	}
	// The service built here has passkeys off (they need the server's
	// relying party): the store counts them.
	passkeys, err := st.Passkeys(ctx, u.Subject)
	if err != nil {
		return err
	}
	status.Passkeys = len(passkeys)
	out := cmd.OutOrStdout()
	switch action {
	case "show":
		printFactors(cmd, u, status)
	case "reset":
		if err := fs.Reset(mfaAuditChange(cmd, app, u, "mfa_reset"), u); err != nil {
			return fmt.Errorf("resetting the second factors of %q: %w", username, err)
		}
		fmt.Fprintf(out, "removed the TOTP factor and the recovery codes of %s and ended its sessions; until a factor is enrolled again it signs in with its password alone, without the scopes that need a second factor\n", username)
		if status.Passkeys > 0 {
			fmt.Fprintf(out, "%s keeps its %d passkey(s), a factor still: the user removes them on the account page\n", username, status.Passkeys)
		}
		if app.UsersFile != "" {
			listed, err := users.Load(app.UsersFile)
			if err != nil {
				return fmt.Errorf("reading the users file %s: %w", app.UsersFile, err)
			}
			if _, ok := listed.TOTPSecrets[username]; ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the users file %s seeds %s a totp_secret: the next start enrols it again; remove it from the file\n",
					app.UsersFile, username)
			}
		}
	case "recovery-codes":
		if !status.Any() {
			return fmt.Errorf("user %q has no second factor (TOTP or passkey): recovery codes stand in for one, and would never be asked for", username)
		}
		codes, err := fs.NewRecoveryCodes(mfaAuditChange(cmd, app, u, "mfa_recovery_codes"), u)
		if err != nil {
			return fmt.Errorf("making recovery codes for %q: %w", username, err)
		}
		fmt.Fprintf(out, "new recovery codes of %s, replacing any it had; each works once, and they are shown only now:\n", username)
		for _, c := range codes {
			fmt.Fprintln(out, c)
		}
	}
	return nil
}

// mfaAuditChange is cmd's context carrying the pending audit change of
// action on u's second factors (withAuditChange), which the store keeps
// in the transaction of the change. It names the user: the factors' store
// methods know only the subject. It records what was done, never a
// secret or a code.
func mfaAuditChange(cmd *cobra.Command, app *caddymodule.App, u store.User, action string) context.Context {
	ctx, c := withAuditChange(cmd, app, action, time.Now())
	c.Username, c.Subject = u.Username, u.Subject
	return ctx
}

// printFactors prints what second factors u has: never a secret.
func printFactors(cmd *cobra.Command, u store.User, st factors.Status) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "user %s (subject %s)\n", u.Username, u.Subject)
	if st.TOTP {
		fmt.Fprintf(out, "totp: enrolled %s\n", cliTime(st.TOTPSince))
	} else {
		fmt.Fprintln(out, "totp: none")
	}
	fmt.Fprintf(out, "passkeys: %d\n", st.Passkeys)
	fmt.Fprintf(out, "recovery codes: %d left\n", st.RecoveryCodes)
}
