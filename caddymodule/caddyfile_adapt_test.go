package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestCaddyfileAdapt adapts each testdata/caddyfile_adapt/*.caddyfiletest:
// a Caddyfile, a line of dashes, and the JSON it must adapt to.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/caddyfile_adapt/*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt tests found: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			caddyfile, expected, ok := strings.Cut(string(data), "----------")
			if !ok {
				t.Fatal("no ---------- separator between the Caddyfile and the JSON")
			}
			if !caddytest.CompareAdapt(t, file, strings.TrimSpace(caddyfile)+"\n", "caddyfile", strings.TrimSpace(expected)) {
				t.Error("adapted JSON differs (diff above)")
			}
		})
	}
}

// TestCaddyfileExampleAdapt adapts the demo configuration at the repository
// root, with its environment placeholders at their defaults.
func TestCaddyfileExampleAdapt(t *testing.T) {
	for _, v := range []string{"GATEHOUSE_HTTP_PORT", "GATEHOUSE_BIND", "GATEHOUSE_ADMIN", "GATEHOUSE_BACKEND_PORT", "GATEHOUSE_QUERY_DB"} {
		t.Setenv(v, "") // restores the variable after the test
		os.Unsetenv(v)
	}
	caddyfile, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	expected, err := os.ReadFile("testdata/caddyfile_example.json")
	if err != nil {
		t.Fatal(err)
	}
	if !caddytest.CompareAdapt(t, "Caddyfile.example", string(caddyfile), "caddyfile", strings.TrimSpace(string(expected))) {
		t.Error("Caddyfile.example adapts to other JSON than testdata/caddyfile_example.json (diff above)")
	}
}
