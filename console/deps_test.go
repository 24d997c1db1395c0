package console_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/internal/importtable"
)

// allowedImports is the import table of console: besides the standard
// library, entitle alone (a venue's grammar, for the configured symbols).
// The page talks to the identity server, the gateway and the query service
// over HTTP and WebSocket from the browser; the package imports none of
// them, nor Caddy.
var allowedImports = map[string][]string{
	"console": {"entitle"},
}

// TestImportTable fails when console imports, outside the standard
// library, what its row does not allow.
func TestImportTable(t *testing.T) {
	importtable.CheckRows(t, ".", allowedImports)
}
