package cli

import (
	"errors"
	"fmt"
	"io"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity/keys"
)

// setUpAuditCommand adds the subcommands of `gatehouse audit` to cmd.
func setUpAuditCommand(cmd *cobra.Command) {
	addStoreFlags(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "keys",
		Short: "Prints every audit public key of the store as a JWK Set (no private key is opened)",
		Args:  cobra.NoArgs,
		RunE:  runAuditKeys,
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "verify [--config <file>] [<file>...]",
		Short: "Verifies the audit logs against the store's audit keys and checkpoints",
		RunE:  runAuditVerify,
	})
	usage := &cobra.Command{
		Use:   "usage --from <date> --to <date> [--format csv|json] [--config <file>] [<file>...]",
		Short: "Prints per user, venue and feed the days entitled and used, peak subscriptions, subscription-minutes, queries and rows read",
		RunE:  runAuditUsage,
	}
	usage.Flags().String("from", "", "First UTC day of the report, YYYY-MM-DD (required)")
	usage.Flags().String("to", "", "Last UTC day of the report, YYYY-MM-DD, included (required)")
	usage.Flags().String("format", "csv", "Output format: csv or json")
	cmd.AddCommand(usage)
}

func runAuditKeys(cmd *cobra.Command, _ []string) error {
	st, err := openStore(cmd)
	if err != nil {
		return err
	}
	defer st.Close()
	set, err := keys.AuditJWKS(cmd.Context(), st)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", set)
	return err
}

// errAuditProblems is the error of a verify that found a problem: the
// report says which.
var errAuditProblems = errors.New("the audit log does not verify")

// auditFiles returns the files named, or, when none is, those --config's
// logging section writes the audit logger to. With both, --config names
// only the store (a PostgreSQL one, say, and files gathered from several
// instances).
func auditFiles(cmd *cobra.Command, files []string) ([]string, error) {
	configFile, _ := cmd.Flags().GetString("config")
	switch {
	case configFile != "" && len(files) > 0:
		return files, nil
	case configFile != "":
		adapter, _ := cmd.Flags().GetString("adapter")
		cfgJSON, _, _, err := caddycmd.LoadConfig(configFile, adapter)
		if err != nil {
			return nil, err
		}
		if files, err = caddymodule.AuditLogFiles(cfgJSON); err != nil {
			return nil, fmt.Errorf("config %q: %w", configFile, err)
		}
	case len(files) == 0:
		return nil, errors.New("name the audit files (a rolled chain's oldest first), or --config")
	}
	return files, nil
}

// verifyAuditFiles verifies files with the store's audit keys and
// checkpoints.
func verifyAuditFiles(cmd *cobra.Command, files []string) (*caddymodule.AuditCheck, error) {
	st, err := openStore(cmd)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return caddymodule.VerifyAudit(cmd.Context(), st, files)
}

func runAuditVerify(cmd *cobra.Command, files []string) error {
	files, err := auditFiles(cmd, files)
	if err != nil {
		return err
	}
	check, err := verifyAuditFiles(cmd, files)
	if err != nil {
		return err
	}
	printAuditCheck(cmd.OutOrStdout(), files, check)
	if !check.OK() {
		return errAuditProblems
	}
	return nil
}

// printAuditCheck writes what verify found, a line per finding.
func printAuditCheck(out io.Writer, files []string, c *caddymodule.AuditCheck) {
	for _, f := range files {
		fmt.Fprintf(out, "read %s\n", f)
	}
	fmt.Fprintf(out, "%d records of %d runs, %d checkpoints verified, %d checkpoints of the store compared\n",
		c.Records, c.Runs, c.Checkpoints, c.Compared)
	for _, p := range c.Problems {
		fmt.Fprintf(out, "PROBLEM %s\n", p)
	}
	for _, s := range c.Unprotected {
		fmt.Fprintf(out, "unprotected %s: instance %q run %q seq %d to %d: after the run's last checkpoint, nothing signed vouches for them\n",
			s.Position, s.Instance, s.Run, s.From, s.To)
	}
	for _, p := range c.Cuts {
		fmt.Fprintf(out, "cut %s: a line a crash cut short (not a tamper)\n", p)
	}
	for _, i := range c.Unchecked {
		fmt.Fprintf(out, "not checked: instance %q has checkpoints in the store and no record in these files\n", i)
	}
	if c.OK() {
		fmt.Fprintln(out, "OK: every chain and checkpoint verifies")
	} else {
		fmt.Fprintf(out, "FAILED: %d problems\n", len(c.Problems))
	}
}
