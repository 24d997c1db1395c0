package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/spf13/cobra"
)

// clientSecretBytes is the entropy of a generated client secret: 256 bits.
const clientSecretBytes = 32

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
			secret, digest := newClientSecret()
			fmt.Fprintf(cmd.OutOrStdout(), "client_secret: %s\nsecret_sha256: %s\n", secret, digest)
			return nil
		},
	})
}

// newClientSecret returns a new client secret and the hex SHA-256 digest of
// it.
func newClientSecret() (secret, digest string) {
	b := make([]byte, clientSecretBytes)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	secret = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(secret))
	return secret, hex.EncodeToString(sum[:])
}
