package integration

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateWritesNothing: `gatehouse validate` on a config the core
// refuses exits non-zero with the core's message, and creates no file:
// no database, no users seeded from the users file. On a good config it
// succeeds.
func TestValidateWritesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"confidential client without a secret", "\t\tclient broken {\n\t\t\tgrant_types client_credentials\n\t\t}\n", "a confidential client needs a secret"},
		{"announce past the period", "\t\tsigning_keys {\n\t\t\tperiod 1h\n\t\t}\n", "must be shorter than the key period"},
		{"public client with client_credentials", "\t\tclient broken {\n\t\t\tpublic\n\t\t\tgrant_types client_credentials\n\t\t}\n", "cannot use client_credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := demoVariant(t, "validate-"+strings.ReplaceAll(tc.name, " ", "-"), configEdit{anchor: anchorGatehouse, insert: tc.edit})
			data := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "validate", "--config", config)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data, "HOME="+data)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("gatehouse validate: %v, want an error saying %q:\n%s", err, tc.want, out)
			}
			var files []string
			filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					files = append(files, path)
				}
				return nil
			})
			if len(files) > 0 {
				t.Fatalf("gatehouse validate of a refused config wrote %v", files)
			}
		})
	}
	t.Run("good config", func(t *testing.T) {
		data := t.TempDir()
		ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "validate", "--config", filepath.Join(repoRoot, demoConfig))
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data, "HOME="+data)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gatehouse validate of the demo: %v\n%s", err, out)
		}
	})
}
