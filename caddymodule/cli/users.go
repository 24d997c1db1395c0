package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// setUpUserCommand adds the flags and subcommands of `gatehouse user` to cmd.
func setUpUserCommand(cmd *cobra.Command) {
	addStoreFlags(cmd)

	add := &cobra.Command{
		Use:   "add <username> [--subject <id>] [--name <text>] [--email <addr>] [--scope <scope>]... [--role <role>]...",
		Short: "Adds a user, with a password read from standard input",
		Args:  cobra.ExactArgs(1),
		RunE:  runUserAdd,
	}
	add.Flags().String("subject", "", "Fixed subject id (\"sub\"); default: a random UUID")
	add.Flags().String("name", "", "Display name")
	add.Flags().String("email", "", "E-mail address")
	add.Flags().Bool("email-verified", false, "Mark the e-mail address as verified")
	add.Flags().StringArray("scope", nil, "A scope the user may hold (repeatable)")
	add.Flags().StringArray("role", nil, "A role of the user (repeatable)")
	add.Flags().StringArray("entitle", nil, "A market-data entitlement of the user, VENUE:feed (repeatable)")
	cmd.AddCommand(add)

	cmd.AddCommand(&cobra.Command{
		Use:   "passwd <username>",
		Short: "Sets a user's password, read from standard input",
		Args:  cobra.ExactArgs(1),
		RunE:  runUserPasswd,
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "disable <username>",
		Short: "Disables a user: no login, no refresh",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return setUserDisabled(cmd, args[0], true) },
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "enable <username>",
		Short: "Enables a disabled user",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return setUserDisabled(cmd, args[0], false) },
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "delete <username>",
		Short: "Deletes a user and its consents, and ends its sessions",
		Args:  cobra.ExactArgs(1),
		RunE:  runUserDelete,
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "scopes <username> [<scope>...]",
		Short: "Sets the scopes a user may hold (none when none is given), and ends the user's sessions",
		Args:  cobra.MinimumNArgs(1),
		RunE:  runUserScopes,
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "Lists the users (without password hashes)",
		Args:  cobra.NoArgs,
		RunE:  runUserList,
	})
	setUpEntitlementCommands(cmd)
	setUpMFACommand(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "hash",
		Short: "Prints the argon2id hash of a password read from standard input, for users files",
		Args:  cobra.NoArgs,
		RunE:  runUserHash,
	})
}

func runUserAdd(cmd *cobra.Command, args []string) error {
	fl := cmd.Flags()
	u := store.User{Username: args[0]}
	u.Subject, _ = fl.GetString("subject")
	u.DisplayName, _ = fl.GetString("name")
	u.Email, _ = fl.GetString("email")
	u.EmailVerified, _ = fl.GetBool("email-verified")
	u.Scopes, _ = fl.GetStringArray("scope")
	u.Roles, _ = fl.GetStringArray("role")
	pairs, _ := fl.GetStringArray("entitle")
	if err := users.ValidateUsername(u.Username); err != nil {
		return err
	}
	var err error
	if u.Entitlements, err = users.ParseEntitlements(pairs); err != nil {
		return fmt.Errorf("adding user %q: %w", u.Username, err)
	}
	subjectGiven := u.Subject != ""
	if !subjectGiven {
		var err error
		if u.Subject, err = users.NewSubject(); err != nil {
			return err
		}
	}
	if err := users.ValidateSubject(u.Subject); err != nil {
		return err
	}
	hash, err := hashPasswordFrom(cmd)
	if err != nil {
		return err
	}
	u.PasswordHash = hash
	u.Created = time.Now()
	u.Updated = u.Created

	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	if id, ok := users.ClientNamed(u.Subject, app.ClientIDs()); ok {
		return fmt.Errorf("adding user %q: the subject %q names client %q of the config (%w): choose another subject",
			u.Username, u.Subject, id, users.ErrSubjectNamesClient)
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, _ := withAuditChange(cmd, app, "add", u.Created)
	if err := st.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return takenError(cmd.Context(), st, u, subjectGiven)
		}
		if errors.Is(err, store.ErrSubjectDeleted) {
			return fmt.Errorf("adding user %q: the subject %q was a deleted user's, and is given to no one again: choose another", u.Username, u.Subject)
		}
		return fmt.Errorf("adding user %q: %w", u.Username, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "added user %s with subject %s\n", u.Username, u.Subject)
	return nil
}

// runUserScopes sets a user's scopes. It ends the user's sessions: their
// takenError says, in the user's terms, what clashed when adding u: its
// username, or the subject the user chose; a subject made up here that
// clashed (a 122-bit random one) is not the user's doing.
func takenError(ctx context.Context, st store.Store, u store.User, subjectGiven bool) error {
	if _, err := st.User(ctx, u.Username); err == nil {
		return fmt.Errorf("adding user %q: a user called %q exists already (gatehouse user show %s)", u.Username, u.Username, u.Username)
	}
	if subjectGiven {
		if other, err := st.UserBySubject(ctx, u.Subject); err == nil {
			return fmt.Errorf("adding user %q: the subject %q is user %q's: choose another, or leave --subject out for a new one", u.Username, u.Subject, other.Username)
		}
		return fmt.Errorf("adding user %q: the subject %q is taken: choose another, or leave --subject out for a new one", u.Username, u.Subject)
	}
	return fmt.Errorf("adding user %q: the subject made up for it clashed with another: run the command again", u.Username)
}

// tokens would keep a scope taken away until they expire, refreshed ones
// included.
func runUserScopes(cmd *cobra.Command, args []string) error {
	scopes := args[1:]
	for _, s := range scopes {
		if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' || r == '\\' }) {
			return fmt.Errorf("%q is not a scope token", s)
		}
	}
	return updateUser(cmd, args[0], "scopes", true, func(u *store.User, c *store.AuditChange) {
		u.Scopes, c.Scopes = scopes, append([]string{}, scopes...)
	})
}

func runUserPasswd(cmd *cobra.Command, args []string) error {
	hash, err := hashPasswordFrom(cmd)
	if err != nil {
		return err
	}
	// A new password ends the user's sessions (docs/design.md: a changed
	// password must not leave a stolen session alive).
	return updateUser(cmd, args[0], "password", true, func(u *store.User, _ *store.AuditChange) { u.PasswordHash = hash })
}

func setUserDisabled(cmd *cobra.Command, username string, disabled bool) error {
	// Disabling ends the user's sessions at once; enabling again revives
	// none of them.
	action := "enable"
	if disabled {
		action = "disable"
	}
	return updateUser(cmd, username, action, disabled, func(u *store.User, _ *store.AuditChange) { u.Disabled = disabled })
}

// runUserDelete deletes a user: its sessions end as when it is disabled,
// its consents go, its username is free again and its subject retired (no
// user gets it again). A users file of --config that lists the subject is
// told of at each start, and one that lists the username with another
// subject adds that user again: the command warns of both.
func runUserDelete(cmd *cobra.Command, args []string) error {
	username := args[0]
	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	ctx, c := withAuditChange(cmd, app, "delete", now)
	c.Entitlements = []string{} // a deleted user holds nothing
	u, err := st.DeleteUser(ctx, username, now, now.Add(sessionsLifetime(app)))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no user %q", username)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "deleted user %s (subject %s) and ended its sessions\n", u.Username, u.Subject)
	if app.UsersFile != "" {
		listed, err := users.LoadFile(app.UsersFile)
		if err != nil {
			return fmt.Errorf("reading the users file %s: %w", app.UsersFile, err)
		}
		for _, l := range listed {
			switch {
			case l.Subject == u.Subject:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the users file %s lists %s with the deleted subject: remove it from the file (a start warns of it, and does not add it again)\n",
					app.UsersFile, l.Username)
			case l.Username == u.Username:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the users file %s lists %s with another subject: the next start adds it again, as a new user; remove it from the file\n",
					app.UsersFile, l.Username)
			}
		}
	}
	return nil
}

// sessionsUntil is how long a subject's revocation lasts when the command
// has no config to tell the longest access-token lifetime: longer than
// any sensible one.
const sessionsUntil = 30 * 24 * time.Hour

// sessionsLifetime is how long a subject's revocation must last for app:
// its longest access-token lifetime and the verifiers' leeway, or
// sessionsUntil when app has no issuer to tell it.
func sessionsLifetime(app *caddymodule.App) time.Duration {
	if app.Issuer != "" {
		if cfg, err := app.IdentityConfig(); err == nil {
			return identity.MaxAccessLifetime(cfg) + verify.MaxLeeway
		}
	}
	return sessionsUntil
}

// updateUser changes the user called username with change, recording
// action for the audit (change may complete the audit change); endSessions
// then revokes every session of the user (refresh families and access
// tokens), which running servers apply within their revocation refresh.
func updateUser(cmd *cobra.Command, username, action string, endSessions bool, change func(*store.User, *store.AuditChange)) error {
	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.User(cmd.Context(), username)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no user %q", username)
	}
	if err != nil {
		return fmt.Errorf("reading user %q: %w", username, err)
	}
	now := time.Now()
	ctx, c := withAuditChange(cmd, app, action, now)
	change(&u, c)
	u.Updated = now
	if err := st.UpdateUser(ctx, u); err != nil {
		return fmt.Errorf("updating user %q: %w", username, err)
	}
	if !endSessions {
		fmt.Fprintf(cmd.OutOrStdout(), "updated user %s\n", username)
		return nil
	}
	// The sessions end at a time taken once the change is stored: a login
	// that read the user before it authenticated earlier, and is refused (a
	// time taken before would let one that read the old password between
	// them through).
	ended := time.Now()
	until := ended.Add(sessionsLifetime(app))
	if err := st.RevokeSubject(cmd.Context(), u.Subject, ended, until); err != nil {
		return fmt.Errorf("ending the sessions of user %q: %w", username, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "updated user %s and ended its sessions\n", username)
	return nil
}

func runUserList(cmd *cobra.Command, _ []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	users, err := st.Users(cmd.Context())
	if err != nil {
		return fmt.Errorf("listing users: %w", err)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USERNAME\tSUBJECT\tNAME\tEMAIL\tSCOPES\tROLES\tDISABLED")
	for _, u := range users {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%t\n", u.Username, u.Subject, orDash(u.DisplayName),
			orDash(u.Email), orDash(strings.Join(u.Scopes, " ")), orDash(strings.Join(u.Roles, " ")), u.Disabled)
	}
	return tw.Flush()
}

func runUserHash(cmd *cobra.Command, _ []string) error {
	hash, err := hashPasswordFrom(cmd)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), hash)
	return nil
}

// hashPasswordFrom reads a password from cmd's standard input, checks its
// length against the min_password_length of --config's app (default 15),
// and hashes it.
func hashPasswordFrom(cmd *cobra.Command) (string, error) {
	app, err := loadApp(cmd)
	if err != nil {
		return "", err
	}
	pw, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr(), true)
	if err != nil {
		return "", err
	}
	if err := users.CheckNewPassword(pw, app.MinPasswordLength); err != nil {
		return "", err
	}
	return users.HashPassword(pw)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
