// Package importtable asks the go command what the module's packages
// import, for the import-table tests (identity/deps_test.go,
// wsauth/deps_test.go): each test holds its own table and rules.
package importtable

import (
	"os/exec"
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
