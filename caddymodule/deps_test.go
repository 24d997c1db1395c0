package caddymodule

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorePackagesDoNotImportCaddy fails when a core package, or one of its
// tests, depends on Caddy: only caddymodule (and cmd) may.
func TestCorePackagesDoNotImportCaddy(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	var patterns []string
	for _, dir := range []string{"identity", "wsauth", "queryproxy", "console"} {
		if _, err := os.Stat(filepath.Join("..", dir)); err == nil {
			patterns = append(patterns, "./"+dir+"/...")
		}
	}
	if len(patterns) == 0 {
		t.Fatal("no core package found")
	}
	args := append([]string{"list", "-e", "-deps", "-test", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}, patterns...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || isCaddy(fields[0]) {
			continue
		}
		for _, imp := range fields[1:] {
			if isCaddy(imp) {
				t.Errorf("%s imports %s: only caddymodule may import Caddy", fields[0], imp)
			}
		}
	}
}

func isCaddy(importPath string) bool {
	return strings.HasPrefix(importPath, "github.com/caddyserver/")
}
