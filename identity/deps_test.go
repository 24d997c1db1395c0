package identity_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/importtable"
)

const module = importtable.Module

// allowedImports is the import table of identity (docs/architecture.md):
// each package may import only the identity packages listed for it.
// Endpoint packages (grant, authorize, device, logout, account) never import each
// other, and the leaves import nothing from identity.
var allowedImports = map[string][]string{
	"identity/oauth":                 {},
	"identity/store":                 {},
	"identity/store/sqlite":          {"identity/store"},
	"identity/store/postgres":        {"identity/store"},
	"identity/store/postgres/pgtest": {},
	"identity/store/storetest":       {"identity/store"},
	"identity/verify":                {"identity/store"},
	"identity/verify/verifytest":     {"identity/verify"},
	"identity/clients":               {"identity/oauth", "identity/verify"},
	"identity/users":                 {"identity/store"},
	"identity/mfa":                   {},
	"identity/factors":               {"identity/store", "identity/mfa", "identity/keys", "identity/users", "identity/oauth"},
	"identity/factors/passkeytest":   {},
	"identity/account": {"identity/factors", "identity/session", "identity/users", "identity/web", "identity/store",
		"identity/oauth"},
	"identity/keys":    {"identity/store", "identity/verify"},
	"identity/tokens":  {"identity/keys", "identity/clients", "identity/store", "identity/oauth"},
	"identity/grant":   {"identity/tokens", "identity/clients", "identity/users", "identity/oauth", "identity/store"},
	"identity/web":     {},
	"identity/session": {"identity/store"},
	"identity/authorize": {"identity/tokens", "identity/clients", "identity/users", "identity/oauth", "identity/store",
		"identity/session", "identity/web", "identity/verify", "identity/factors"},
	"identity/device": {"identity/tokens", "identity/clients", "identity/users", "identity/oauth", "identity/store",
		"identity/session", "identity/web"},
	"identity/logout": {"identity/tokens", "identity/clients", "identity/oauth", "identity/store", "identity/session",
		"identity/web", "identity/verify"},
	"identity": {"identity/oauth", "identity/clients", "identity/users", "identity/keys", "identity/tokens",
		"identity/grant", "identity/authorize", "identity/device", "identity/session", "identity/web", "identity/store",
		"identity/verify", "identity/logout", "identity/factors", "identity/account"},
}

// TestImportTable fails when an identity package imports an identity
// package its row does not allow, when a package has no row, or when
// anything but the Caddy glue, the command and the benchmarks imports the
// root identity package. Tests may import more (a test fixture needs a
// store backend).
func TestImportTable(t *testing.T) {
	checked := 0
	for _, p := range importtable.List(t, "..", module+"...") {
		pkg := strings.TrimPrefix(p.Path, module)
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if dep == "identity" && !strings.HasPrefix(pkg, "identity") && !strings.HasPrefix(pkg, "caddymodule") &&
				!strings.HasPrefix(pkg, "bench/") && !strings.HasPrefix(pkg, "cmd/") {
				t.Errorf("%s imports the root identity package: only the Caddy glue, cmd and bench may", pkg)
			}
			if !strings.HasPrefix(pkg, "identity") || !strings.HasPrefix(dep, "identity") {
				continue
			}
			allowed, known := allowedImports[pkg]
			if !known {
				t.Errorf("%s has no row in the import table", pkg)
				break
			}
			if !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which the import table does not allow", pkg, dep)
			}
		}
		if _, known := allowedImports[pkg]; known {
			checked++
		}
	}
	if checked != len(allowedImports) {
		t.Errorf("go list showed %d of the table's %d packages", checked, len(allowedImports))
	}
}

// TestDocsNameTheirRow: each package's doc names the packages its row
// allows, or says that it imports nothing of the module: a doc gives its
// own row, and this table is the source of every row.
func TestDocsNameTheirRow(t *testing.T) {
	for pkg, row := range allowedImports {
		importtable.CheckDoc(t, "..", pkg, row)
	}
}
