package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	// The commands open the default store, gatehouse.stores.sqlite.
	_ "github.com/gatehouse/gatehouse/caddymodule/sqlitestore"
)

// run runs `gatehouse <name> args...` with stdin, and returns its output.
func run(t *testing.T, setUp func(*cobra.Command), name, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := &cobra.Command{Use: name, SilenceUsage: true, SilenceErrors: true}
	setUp(cmd)
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}
