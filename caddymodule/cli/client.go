package cli

import (
	"fmt"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/spf13/cobra"
)

// setUpClientCommand adds the subcommands of `gatehouse client` to cmd.
func setUpClientCommand(cmd *cobra.Command) {
	cmd.AddCommand(&cobra.Command{
		Use:   "secret",
		Short: "Generates a client secret and prints it once, with its SHA-256 for the config",
		Long: `
Generates a client secret with 256 bits from the system's secure random
source and prints it once, with its SHA-256 digest in hex. Give the secret to
the client; put the digest in the client's secret_sha256 in the config. The
secret is not stored anywhere and cannot be shown again.
`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret, digest, err := clients.NewSecret()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "client_secret: %s\nsecret_sha256: %s\n", secret, digest)
			return nil
		},
	})
}
