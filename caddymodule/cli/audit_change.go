package cli

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity/store"
)

// withAuditChange returns cmd's context carrying a pending audit change of
// action made at made (store.WithAuditChange): the store keeps it in the
// change's own transaction, and a running instance's audit run writes it
// into its chain (docs/audit.md, "Changes made with the CLI"). The change
// is returned for the caller to complete (a scopes change's scopes). With
// --config naming a configuration whose audit is off, the context carries
// none: no instance of it would ever write one.
func withAuditChange(cmd *cobra.Command, app *caddymodule.App, action string, made time.Time) (context.Context, *store.AuditChange) {
	if configFile, _ := cmd.Flags().GetString("config"); configFile != "" && app.Audit == nil {
		return cmd.Context(), &store.AuditChange{} // completed by the caller, stored by no one
	}
	c := &store.AuditChange{ID: rand.Text(), Time: made, Action: action}
	return store.WithAuditChange(cmd.Context(), c), c
}
