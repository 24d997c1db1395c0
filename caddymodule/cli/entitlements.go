package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/store"
)

// setUpEntitlementCommands adds `user entitle`, `user unentitle` and
// `user show` to cmd.
func setUpEntitlementCommands(cmd *cobra.Command) {
	cmd.AddCommand(&cobra.Command{
		Use:   "entitle <username> <VENUE:feed>...",
		Short: "Gives a user market-data entitlements (ASX:quotes ASX:depth), and revokes the user's access tokens issued before",
		Long: `Gives a user market-data entitlements, each a venue and a feed (ASX:quotes).

When the user's set changes, the user's access tokens issued before are revoked
(as disable revokes them, but the sessions stay): HTTP routes refuse them, a
live socket keeps the subscriptions the user still holds, and the next refresh
issues the new set (of the pairs its session was granted: a pair the session
never had needs a new login).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return changeEntitlements(cmd, args[0], args[1:], true) },
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "unentitle <username> <VENUE:feed>...",
		Short: "Takes market-data entitlements away from a user, and revokes the user's access tokens issued before",
		Long: `Takes market-data entitlements away from a user. When the user's set changes,
the user's access tokens issued before are revoked: HTTP routes refuse them,
a live socket ends the subscriptions that needed a pair taken away, and the
next refresh issues what is left.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeEntitlements(cmd, args[0], args[1:], false)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show <username>",
		Short: "Shows a user (without its password hash), with its entitlements",
		Args:  cobra.ExactArgs(1),
		RunE:  runUserShow,
	})
}

// changeEntitlements adds pairs to the entitlements of username (add) or
// takes them away, in one store transaction that also revokes the user's
// access tokens issued before when the set changed.
func changeEntitlements(cmd *cobra.Command, username string, texts []string, add bool) error {
	given, err := entitle.Parse(texts...)
	if err != nil {
		return err
	}
	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	var before entitle.Set
	update := func(old entitle.Set) (entitle.Set, error) {
		before = old
		if !add {
			return entitle.New(slices.DeleteFunc(slices.Clone(old.Pairs()), func(p entitle.Pair) bool {
				return given.Has(p.Venue, p.Feed)
			})...)
		}
		next, err := entitle.New(append(slices.Clone(old.Pairs()), given.Pairs()...)...)
		if err != nil {
			return entitle.Set{}, err
		}
		return next, next.CheckTokenSize()
	}
	now := time.Now()
	action := "unentitle"
	if add {
		action = "entitle"
	}
	ctx, _ := withAuditChange(cmd, app, action, now)
	u, err := st.UpdateEntitlements(ctx, username, update, now, now.Add(sessionsLifetime(app)))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no user %q", username)
	case err != nil:
		return err
	}
	out := cmd.OutOrStdout()
	if u.Entitlements.Equal(before) {
		fmt.Fprintf(out, "user %s holds %s: unchanged\n", username, orDash(u.Entitlements.String()))
		return nil
	}
	fmt.Fprintf(out, "user %s holds %s; its access tokens issued before are revoked\n", username, orDash(u.Entitlements.String()))
	return nil
}

func runUserShow(cmd *cobra.Command, args []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.User(cmd.Context(), args[0])
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no user %q", args[0])
	case err != nil:
		return fmt.Errorf("reading user %q: %w", args[0], err)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"username", u.Username}, {"subject", u.Subject}, {"name", orDash(u.DisplayName)},
		{"email", orDash(u.Email)}, {"email verified", fmt.Sprint(u.EmailVerified)},
		{"scopes", orDash(strings.Join(u.Scopes, " "))}, {"roles", orDash(strings.Join(u.Roles, " "))},
		{"entitlements", orDash(u.Entitlements.String())}, {"disabled", fmt.Sprint(u.Disabled)},
		{"created", stamp(u.Created)}, {"updated", stamp(u.Updated)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}

// stamp is t in RFC 3339, or "-" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
