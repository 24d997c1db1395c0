package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/identity"
	"github.com/gatehouse/gatehouse/identity/keys"
)

// setUpKeysCommand adds the flags and subcommands of `gatehouse keys` to
// cmd.
func setUpKeysCommand(cmd *cobra.Command) {
	addStoreFlags(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "Lists the signing keys and their schedule (no private key is opened)",
		Args:  cobra.NoArgs,
		RunE:  runKeysList,
	})
	rotate := &cobra.Command{
		Use:   "rotate [--alg RS256|ES256|EdDSA] [--immediately [--revoke]]",
		Short: "Creates a new signing key per algorithm that takes over after the announce time",
		Args:  cobra.NoArgs,
		RunE:  runKeysRotate,
	}
	rotate.Flags().String("alg", "", "Rotate the key of this algorithm only (RS256, ES256 or EdDSA; one of signing_keys algorithms). Default: every algorithm the config keeps keys for")
	rotate.Flags().Bool("immediately", false, "Sign with the new key at once (tokens of the old key stay valid; verifiers caching the key set may refuse new tokens until they refresh)")
	rotate.Flags().Bool("revoke", false, "With --immediately, for a key that may be compromised: remove every other key at once, so the tokens they signed stop verifying once the servers reload their keys (check_interval)")
	cmd.AddCommand(rotate)
}

func runKeysList(cmd *cobra.Command, _ []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := keys.List(cmd.Context(), st, time.Now())
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tALG\tSTATUS\tENCRYPTED\tCREATED\tSIGN_FROM\tRETIRE_AT\tREMOVE_AT")
	for _, k := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%s\t%s\n", k.ID, k.Algorithm, k.Status, k.Encrypted,
			cliTime(k.Created), cliTime(k.SignFrom), cliTime(k.RetireAt), cliTime(k.RemoveAt))
	}
	return tw.Flush()
}

func runKeysRotate(cmd *cobra.Command, _ []string) error {
	immediately, _ := cmd.Flags().GetBool("immediately")
	revoke, _ := cmd.Flags().GetBool("revoke")
	if revoke && !immediately {
		return fmt.Errorf("--revoke needs --immediately: a key removed at once needs a successor signing at once")
	}
	app, err := loadApp(cmd)
	if err != nil {
		return err
	}
	pol, err := app.KeyPolicy()
	if err != nil {
		return err
	}
	if configFile, _ := cmd.Flags().GetString("config"); configFile != "" {
		// Keep retired keys as long as the servers of this config do.
		cfg, err := app.IdentityConfig()
		if err != nil {
			return err
		}
		pol.Retention = identity.KeyRetention(cfg)
	}
	st, err := app.OpenStore(cmd.Context())
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now()
	algs := pol.WithDefaults().Algorithms
	if alg, _ := cmd.Flags().GetString("alg"); alg != "" {
		algs = []string{alg}
	}
	out := cmd.OutOrStdout()
	for _, alg := range algs {
		rotate := func() (string, error) { return keys.Rotate(cmd.Context(), st, pol, alg, now, immediately, nil) }
		if revoke {
			rotate = func() (string, error) { return keys.RotateRevoking(cmd.Context(), st, pol, alg, now, nil) }
		}
		kid, err := rotate()
		if err != nil {
			return fmt.Errorf("rotating the %s signing key: %w", alg, err)
		}
		if immediately {
			fmt.Fprintf(out, "new %s signing key %s signs now\n", alg, kid)
		} else {
			fmt.Fprintf(out, "new %s signing key %s is published now and signs from %s\n", alg, kid, cliTime(now.Add(app.SigningKeys.EffectiveAnnounce())))
		}
	}
	fmt.Fprintf(out, "running servers pick it up within %v (signing_keys check_interval)\n", app.SigningKeys.EffectiveCheckInterval())
	return nil
}

// cliTime formats t for tables: RFC 3339 in UTC, "-" when zero.
func cliTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
