package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/gatehouse/gatehouse/audit"
	"github.com/gatehouse/gatehouse/caddymodule"
)

// auditCaddyfile is a config whose audit logger writes to logPath.
func auditCaddyfile(dbPath, logPath string) string {
	return fmt.Sprintf(`{
	admin off
	gatehouse {
		issuer http://127.0.0.1:1
		store sqlite %s
		audit {
			instance gw-cli
			# A line per record: the edits below are of lines.
			flush_delay off
		}
	}
	log default {
		level ERROR
		exclude gatehouse.audit.chain
	}
	log audit {
		output file %s {
			roll_disabled
		}
		format json
		include gatehouse.audit.chain
	}
}
`, dbPath, logPath)
}

// TestAuditVerifyConfig runs a config through Caddy, appends records
// through the app's AuditWriter, stops, and runs `gatehouse audit verify
// --config`: it finds the log itself and passes; `audit keys` exports the
// key that signed. Then a byte of a record is changed, a record is
// dropped, and the store's last checkpoint is cut from the log: verify
// fails each time, naming the record. It failed when verify ignored the
// store's checkpoints (the cut tail passed).
func TestAuditVerifyConfig(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	dbPath, logPath := filepath.Join(dir, "gatehouse.db"), filepath.Join(dir, "audit.log")
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(auditCaddyfile(dbPath, logPath)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgJSON, _, _, err := caddycmd.LoadConfig(cfgPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(cfgJSON, true); err != nil {
		t.Fatalf("loading the config: %v", err)
	}
	v, err := caddy.ActiveContext().App("gatehouse")
	if err != nil {
		caddy.Stop()
		t.Fatal(err)
	}
	w := v.(*caddymodule.App).AuditWriter()
	for _, sub := range []string{"alice", "bob", "carol"} {
		if err := w.Append("authentication", audit.String("sub", sub)); err != nil {
			t.Fatal(err)
		}
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, setUpAuditCommand, "audit", "", "verify", "--config", cfgPath)
	if err != nil || !strings.Contains(out, "OK: every chain and checkpoint verifies") {
		t.Fatalf("verify --config of an untouched log: %v\n%s", err, out)
	}
	// --config names only the store when files are named: a copy of the
	// log elsewhere verifies with the config's store.
	copied := filepath.Join(t.TempDir(), "copy.log")
	if data, err := os.ReadFile(logPath); err != nil || os.WriteFile(copied, data, 0o600) != nil {
		t.Fatalf("copying the log: %v", err)
	}
	out, err = run(t, setUpAuditCommand, "audit", "", "verify", "--config", cfgPath, copied)
	if err != nil || !strings.Contains(out, "read "+copied+"\n") || strings.Contains(out, "read "+logPath) ||
		!strings.Contains(out, "1 checkpoints of the store compared") {
		t.Fatalf("verify --config FILE: %v\n%s", err, out)
	}
	out, err = run(t, setUpAuditCommand, "audit", "", "keys", "--config", cfgPath)
	var set struct{ Keys []struct{ Kid, Kty string } }
	if err != nil || json.Unmarshal([]byte(out), &set) != nil || len(set.Keys) != 1 ||
		!strings.HasPrefix(set.Keys[0].Kid, "audit-") || set.Keys[0].Kty != "OKP" {
		t.Fatalf("audit keys: %v\n%s", err, out)
	}

	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(log, []byte("\n"))
	for _, tt := range []struct {
		name string
		log  []byte
		want string
	}{
		// Line 1 is run_start, 2 the identity server's signing key created
		// (key_rotation), 3 to 5 alice's, bob's and carol's records.
		{"byte changed", bytes.Replace(log, []byte(`"bob"`), []byte(`"bib"`), 1), ":4: edited:"},
		{"record dropped", bytes.Join(append(append([][]byte{}, lines[:3]...), lines[4:]...), nil), ":4: removed:"},
		{"tail cut after the records", bytes.Join(lines[:5], nil), ":6: removed:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			edited := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(edited, tt.log, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := run(t, setUpAuditCommand, "audit", "", "verify", "--db", dbPath, edited)
			if !errors.Is(err, errAuditProblems) || !strings.Contains(out, "PROBLEM "+edited+tt.want) {
				t.Fatalf("verify: %v, want a problem %q\n%s", err, tt.want, out)
			}
		})
	}
}
