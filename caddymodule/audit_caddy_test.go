package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// auditConfig is a Caddy JSON config of a gatehouse app with an audit
// block and the audit logger's log auditLog (nil: none), the default log
// excluding it.
func auditConfig(t *testing.T, dbPath string, auditLog map[string]any, clients ...Client) []byte {
	t.Helper()
	app := App{Issuer: "http://127.0.0.1:1", Clients: clients,
		StoreRaw: json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, dbPath)),
		// A line per record (no flush delay): the tests edit lines.
		Audit: &Audit{Instance: "gw-test", FlushDelay: -1}}
	logs := map[string]any{"default": map[string]any{"level": "ERROR", "exclude": []string{AuditLoggerName}}}
	if auditLog != nil {
		logs["audit"] = auditLog
	}
	b, err := json.Marshal(map[string]any{
		"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": logs},
		"apps":    map[string]any{"gatehouse": app},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileLog is a log of the audit logger alone to a file, in JSON.
func fileLog(path string) map[string]any {
	return map[string]any{"writer": map[string]any{"output": "file", "filename": path, "roll": false},
		"encoder": map[string]any{"format": "json"}, "include": []string{AuditLoggerName}}
}

func activeApp(t *testing.T) *App {
	t.Helper()
	v, err := caddy.ActiveContext().App("gatehouse")
	if err != nil {
		t.Fatal(err)
	}
	return v.(*App)
}

// TestAuditThroughCaddy loads a config whose audit logger writes to a
// file, appends records through AuditWriter, reloads (the run survives,
// its records following on in the same chain), stops (the final
// checkpoint goes to the log and the store), and verifies the file with
// the store's keys and checkpoints; then a byte of a record is changed
// and verify names that record.
func TestAuditThroughCaddy(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	dbPath, logPath := filepath.Join(dir, "gatehouse.db"), filepath.Join(dir, "audit.log")
	if err := caddy.Load(auditConfig(t, dbPath, fileLog(logPath)), true); err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			caddy.Stop()
		}
	})
	w := activeApp(t).AuditWriter()
	if w == nil {
		t.Fatal("AuditWriter is nil with an audit block")
	}
	for _, sub := range []string{"alice", "bob"} {
		if err := w.Append("authentication", audit.String("sub", sub)); err != nil {
			t.Fatal(err)
		}
	}
	// A reload keeps the run: the new config's app hands out the same
	// writer.
	extra := Client{ID: "other", SecretSHA256: []string{demoSecretSHA256}, GrantTypes: []string{"client_credentials"}}
	if err := caddy.Load(auditConfig(t, dbPath, fileLog(logPath), extra), true); err != nil {
		t.Fatalf("reloading: %v", err)
	}
	if got := activeApp(t).AuditWriter(); got != w {
		t.Fatal("a reload started another audit run")
	}
	if err := w.Append("query", audit.String("table", "trades"), audit.Int("rows", 3)); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true

	st, err := sqlite.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check, err := VerifyAudit(t.Context(), st, []string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	// run_start, the identity server's signing key created (its
	// key_rotation record), 3 records, the final checkpoint.
	if !check.OK() || check.Records != 6 || check.Checkpoints != 1 || check.Compared != 1 || len(check.Unprotected) != 0 {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("verify of an untouched log: %+v, problems %v\n%s", check.Report, check.Problems, log)
	}

	// One byte of the fourth line (bob's record) changed.
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(log, []byte(`"bob"`), []byte(`"bib"`), 1)
	if bytes.Equal(edited, log) {
		t.Fatal("no record of bob in the log")
	}
	if err := os.WriteFile(logPath, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	check, err = VerifyAudit(t.Context(), st, []string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	p := check.First()
	if p == nil || p.Kind != audit.Edited || p.Line != 4 || p.Seq != 4 {
		t.Fatalf("verify of an edited log: first problem %v, want the record at line 4 (seq 4) edited", p)
	}
}

// TestAuditRefusesLogging: a log of the audit logger that samples, or
// encodes otherwise than JSON with the default keys, or no log for it, is
// refused at load, with the log named. It failed when the check was left
// out of Provision.
func TestAuditRefusesLogging(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	with := func(k string, v any) map[string]any {
		l := fileLog(logPath)
		l[k] = v
		return l
	}
	for _, tt := range []struct {
		name string
		log  map[string]any
		want string
	}{
		{"sampling", with("sampling", map[string]any{"first": 10}), `log "audit" takes the logger gatehouse.audit.chain and samples`},
		{"console", with("encoder", map[string]any{"format": "console"}), "not json"},
		{"renamed key", with("encoder", map[string]any{"format": "json", "message_key": "kind"}), "renames message_key"},
		{"filter", with("encoder", map[string]any{"format": "filter", "wrap": map[string]any{"format": "json"}}), "not json"},
		{"no log", nil, "no log takes the logger"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := caddy.Load(auditConfig(t, filepath.Join(t.TempDir(), "gatehouse.db"), tt.log), true)
			if err == nil {
				caddy.Stop()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}
