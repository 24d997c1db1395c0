package integration

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/identity/users"
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

// validateCmd runs `gatehouse validate` on config with the data directory data and
// env, and returns its output.
func validateCmd(t *testing.T, config, data string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "validate", "--config", config)
	cmd.Dir = repoRoot
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+data, "HOME="+data), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// filesUnder lists the files under dir.
func filesUnder(dir string) []string {
	var files []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// TestValidateAGoodConfigWritesNothing: `gatehouse validate` of the demo on an empty
// data directory succeeds, says the store was not checked, and leaves no file (no
// store, no query database, no key); `run` on the same directory then creates them
// all; validate again finds the schema current and changes no file.
// It failed when: validate created the database, seeded the users, generated a
// signing key and created the query database.
func TestValidateAGoodConfigWritesNothing(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{})
	g.Stop()
	data := t.TempDir()
	out, err := validateCmd(t, filepath.Join(repoRoot, demoConfig), data)
	if err != nil || !strings.Contains(out, "Valid configuration") || !strings.Contains(out, "the store holds no schema yet") {
		t.Fatalf("validate of the demo: %v\n%s", err, out)
	}
	if files := filesUnder(data); len(files) > 0 {
		t.Fatalf("validate wrote %v", files)
	}
	// A store a start made: validate finds it current, and changes no byte of it.
	before := map[string]string{}
	for _, f := range filesUnder(g.DataDir) {
		if b, err := os.ReadFile(f); err == nil {
			before[f] = string(b)
		}
	}
	if len(before) == 0 {
		t.Fatal("the run left no file to validate against")
	}
	out, err = validateCmd(t, filepath.Join(repoRoot, demoConfig), g.DataDir)
	if err != nil || !strings.Contains(out, "the store's schema is current") {
		t.Fatalf("validate against a started store: %v\n%s", err, out)
	}
	after := filesUnder(g.DataDir)
	if len(after) != len(before) {
		t.Errorf("validate changed the files: %v, was %d files", after, len(before))
	}
	for _, f := range after {
		if b, _ := os.ReadFile(f); string(b) != before[f] {
			t.Errorf("validate changed %s", f)
		}
	}
}

// TestValidateOnPostgreSQLWritesNothing: validate of a config whose store is a fresh
// PostgreSQL database succeeds and leaves the database without a table; a start
// creates the schema.
func TestValidateOnPostgreSQLWritesNothing(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	config := demoVariant(t, "validate-postgres", configEdit{anchor: anchorGatehouse,
		insert: "\t\tstore postgres {\n\t\t\tdsn_env GATEHOUSE_STORE_DSN\n\t\t}\n"})
	tables := func() int {
		var n int
		ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	out, err := validateCmd(t, config, t.TempDir(), "GATEHOUSE_STORE_DSN="+dsn)
	if err != nil || !strings.Contains(out, "the store holds no schema yet") {
		t.Fatalf("validate on a fresh PostgreSQL database: %v\n%s", err, out)
	}
	if n := tables(); n != 0 {
		t.Fatalf("validate created %d tables", n)
	}
	g := StartGatehouseWith(t, Options{Config: config, Env: []string{"GATEHOUSE_STORE_DSN=" + dsn}})
	g.Stop()
	if n := tables(); n == 0 {
		t.Fatal("a start created no table")
	}
	out, err = validateCmd(t, config, t.TempDir(), "GATEHOUSE_STORE_DSN="+dsn)
	if err != nil || !strings.Contains(out, "the store's schema is current") {
		t.Fatalf("validate on a started PostgreSQL store: %v\n%s", err, out)
	}
}

// TestReloadSeedsNewUsers: with the store's writes at start (not at validation), a
// reload still creates the users the users file gained since.
func TestReloadSeedsNewUsers(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(filepath.Join(repoRoot, "examples/users.json"))
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(usersFile, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	config := demoVariant(t, "reload-users", configEdit{anchor: "\t\tusers_file examples/users.json\n",
		insert: "\t\tusers_file " + usersFile + "\n", replace: true})
	g := StartGatehouseWith(t, Options{Config: config})
	hash, err := users.HashPassword("a pass phrase for newbie")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := json.Unmarshal(orig, &doc); err != nil {
		t.Fatal(err)
	}
	doc["users"] = append(doc["users"], map[string]any{"username": "newbie", "subject": "newbie-1", "password_hash": hash,
		"scopes": []string{"Service/Market"}})
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(usersFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g.Reload(config)
	g.PasswordGrant(t, "newbie", "a pass phrase for newbie")
}
