// Package importtable asks the go command what the module's packages
// import, for the import-table tests (identity/deps_test.go,
// queryproxy/deps_test.go, wsauth/deps_test.go): each test holds its own
// table and rules. CheckRows is the plain rule (a row per package, the
// standard library free), which audit and wsauth use; CheckDoc holds a
// package's doc to its row.
package importtable

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Module is the module's path with a trailing slash, as the tables' rows
// leave it out.
const Module = "github.com/gatehouse/gatehouse/"

// Package is a package go list showed: its import path and its imports
// (tests' not included), both whole.
type Package struct {
	Path    string
	Imports []string
}

// List runs go list on patterns in dir. It skips t when the go command is
// not on PATH and fails it when go list fails.
func List(t testing.TB, dir string, patterns ...string) []Package {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command(goBin, append([]string{"list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, patterns...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []Package
	for line := range strings.Lines(string(out)) {
		if fields := strings.Fields(line); len(fields) > 0 {
			pkgs = append(pkgs, Package{Path: fields[0], Imports: fields[1:]})
		}
	}
	return pkgs
}

// leafWords are how a package doc says that its row is empty.
var leafWords = regexp.MustCompile(`(?i)imports nothing from identity|no other gatehouse package|any gatehouse package`)

// CheckDoc fails t unless the package doc of pkg (a row's key, under root)
// names each package of its row by its last element ("store" for
// identity/store), or, for an empty row, says it imports nothing of the
// module: each package's doc gives its own row of the table.
func CheckDoc(t testing.TB, root, pkg string, row []string) {
	t.Helper()
	doc := strings.Join(strings.Fields(Doc(t, filepath.Join(root, filepath.FromSlash(pkg)))), " ")
	if doc == "" {
		t.Errorf("%s has no package doc", pkg)
		return
	}
	if len(row) == 0 && !leafWords.MatchString(doc) {
		t.Errorf("%s: its package doc does not say that it imports nothing of the module, as its row says", pkg)
	}
	for _, dep := range row {
		name := path.Base(dep)
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(doc) {
			t.Errorf("%s: its package doc does not name %s, which its row of the import table allows", pkg, dep)
		}
	}
}

// Doc is the package comment of the Go package in dir (its non-test
// files'), as go doc shows it.
func Doc(t testing.TB, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var doc strings.Builder
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			doc.WriteString(af.Doc.Text())
		}
	}
	return doc.String()
}

// CheckRows fails t when a package under dir imports, outside the
// standard library, what its row of table does not allow (rows name the
// module's packages without the module's path), when a package under dir
// has no row, or when a row's package is not there.
func CheckRows(t testing.TB, dir string, table map[string][]string) {
	t.Helper()
	checked := 0
	for _, p := range List(t, dir, "./...") {
		pkg := strings.TrimPrefix(p.Path, Module)
		allowed, known := table[pkg]
		if !known {
			t.Errorf("%s has no row in the import table", pkg)
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
				continue // the standard library
			}
			if !slices.Contains(allowed, strings.TrimPrefix(imp, Module)) {
				t.Errorf("%s imports %s, which the import table does not allow", pkg, imp)
			}
		}
	}
	if checked != len(table) {
		t.Errorf("go list showed %d of the table's %d packages", checked, len(table))
	}
}
