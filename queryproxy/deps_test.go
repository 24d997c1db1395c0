package queryproxy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/importtable"
)

// allowedImports is the import table of queryproxy (docs/architecture.md): each package
// under queryproxy may import only the module's packages its row lists (without the
// module's path). iql, the language, imports nothing of the module; sqlgen only iql;
// engine, the contract with the engines, only sqlgen and iql; the engines engine and
// sqlgen (and iqengine iql, its upstream's grammar), never the handler (the root); the
// root iql, sqlgen and engine, and the leaves entitle (the caller's market-data
// entitlements) and audit (its records), never an engine.
var allowedImports = map[string][]string{
	"queryproxy/iql":          {},
	"queryproxy/sqlgen":       {"queryproxy/iql"},
	"queryproxy/engine":       {"queryproxy/sqlgen", "queryproxy/iql"},
	"queryproxy/enginetest":   {"queryproxy/engine", "queryproxy/sqlgen", "queryproxy/iql"},
	"queryproxy/sqliteengine": {"queryproxy/engine", "queryproxy/sqlgen", "internal/contain", "internal/sqlitefile"},
	"queryproxy/pgengine":     {"queryproxy/engine", "queryproxy/sqlgen", "internal/contain"},
	"queryproxy/iqengine":     {"queryproxy/engine", "queryproxy/sqlgen", "queryproxy/iql", "internal/contain"},
	"queryproxy":              {"queryproxy/iql", "queryproxy/sqlgen", "queryproxy/engine", "internal/contain", "entitle", "audit"},
}

// pure are the packages that import nothing but the standard library and their row: the
// language, the generator, the contract and its suite (no driver, no zap, no Caddy).
var pure = []string{"queryproxy/iql", "queryproxy/sqlgen", "queryproxy/engine", "queryproxy/enginetest"}

// otelAPI is all of OpenTelemetry a queryproxy package may import: the tracing API, whose
// spans go to the provider of the request's span (Caddy's tracing directive); never the
// SDK or an exporter, which are the process's to choose.
var otelAPI = []string{"go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/trace"}

// rootImporter reports whether pkg may import the root queryproxy package (the handler):
// the Caddy glue that wires it, and the benchmarks. Tests may too (go list leaves their
// imports out).
func rootImporter(pkg string) bool {
	return pkg == "caddymodule/queryhandler" || strings.HasPrefix(pkg, "bench/")
}

// TestImportTable fails when a queryproxy package imports a package of the module its row
// does not allow, when a pure one imports anything outside the standard library and its
// row, when one imports OpenTelemetry beyond otelAPI, when a package under queryproxy has
// no row, or when a package but the Caddy glue and the benchmarks imports the root. Tests
// may import more (an engine's tests run the handler over it; the trace tests record
// spans with the SDK).
func TestImportTable(t *testing.T) {
	checked := 0
	for _, p := range importtable.List(t, "..", importtable.Module+"...") {
		pkg := strings.TrimPrefix(p.Path, importtable.Module)
		allowed, known := allowedImports[pkg]
		if strings.HasPrefix(pkg, "queryproxy") {
			if !known {
				t.Errorf("%s has no row in the import table", pkg)
				continue
			}
			checked++
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, importtable.Module)
			if ours && dep == "queryproxy" && !rootImporter(pkg) {
				t.Errorf("%s imports the root queryproxy package: only caddymodule/queryhandler and bench may", pkg)
			}
			if !known {
				continue
			}
			switch {
			case ours && !slices.Contains(allowed, dep):
				t.Errorf("%s imports %s, which the import table does not allow", pkg, dep)
			case !ours && slices.Contains(pure, pkg) && !standard(imp):
				t.Errorf("%s imports %s: it imports the standard library only, and its row", pkg, imp)
			case strings.HasPrefix(imp, "go.opentelemetry.io/") && !slices.Contains(otelAPI, imp):
				t.Errorf("%s imports %s: of OpenTelemetry, only the tracing API %v", pkg, imp, otelAPI)
			}
		}
	}
	if checked != len(allowedImports) {
		t.Errorf("go list showed %d of the table's %d packages", checked, len(allowedImports))
	}
}

// standard reports whether imp is a package of the standard library: its first element
// has no dot.
func standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// TestDocsNameTheirRow: each package's doc names the packages its row
// allows, or says that it imports nothing of the module: a doc gives its
// own row, and this table is the source of every row.
func TestDocsNameTheirRow(t *testing.T) {
	for pkg, row := range allowedImports {
		importtable.CheckDoc(t, "..", pkg, row)
	}
}
