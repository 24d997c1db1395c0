package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/store"
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
		Use:   "list",
		Short: "Lists the users (without password hashes)",
		Args:  cobra.NoArgs,
		RunE:  runUserList,
	})
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
	if err := identity.ValidateUsername(u.Username); err != nil {
		return err
	}
	if u.Subject == "" {
		u.Subject = newSubject()
	}
	if len(u.Subject) > 255 {
		return errors.New("subject must be 1 to 255 bytes")
	}
	hash, err := hashPasswordFrom(cmd)
	if err != nil {
		return err
	}
	u.PasswordHash = hash
	u.Created = time.Now()
	u.Updated = u.Created

	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateUser(cmd.Context(), u); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return fmt.Errorf("adding user %q: the username or subject %q is taken", u.Username, u.Subject)
		}
		return fmt.Errorf("adding user %q: %w", u.Username, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "added user %s with subject %s\n", u.Username, u.Subject)
	return nil
}

func runUserPasswd(cmd *cobra.Command, args []string) error {
	hash, err := hashPasswordFrom(cmd)
	if err != nil {
		return err
	}
	return updateUser(cmd, args[0], func(u *store.User) { u.PasswordHash = hash })
}

func setUserDisabled(cmd *cobra.Command, username string, disabled bool) error {
	return updateUser(cmd, username, func(u *store.User) { u.Disabled = disabled })
}

// updateUser changes the user called username with change.
func updateUser(cmd *cobra.Command, username string, change func(*store.User)) error {
	st, err := openStore(cmd)
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
	change(&u)
	u.Updated = time.Now()
	if err := st.UpdateUser(cmd.Context(), u); err != nil {
		return fmt.Errorf("updating user %q: %w", username, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "updated user %s\n", username)
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

// hashPasswordFrom reads a password from cmd's standard input and hashes it.
func hashPasswordFrom(cmd *cobra.Command) (string, error) {
	pw, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr(), true)
	if err != nil {
		return "", err
	}
	return identity.HashPassword(pw)
}

// newSubject returns a random subject id in the form of a version 4 UUID.
func newSubject() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
