package cli

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testKEK is a key encryption key for tests.
var testKEK = bytes.Repeat([]byte{0xa5, 0x17}, 16)

// keysTable reads a `keys list` table into rows of fields: KID, STATUS,
// ENCRYPTED, CREATED, SIGN_FROM, RETIRE_AT, REMOVE_AT, then ALG (moved
// last).
func keysTable(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "KID ALG STATUS ENCRYPTED CREATED SIGN_FROM RETIRE_AT REMOVE_AT" {
		t.Fatalf("header %q", lines[0])
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows = append(rows, append(append([]string{f[0]}, f[2:]...), f[1]))
	}
	return rows
}

func TestKeysCommandsDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	keys := func(args ...string) string {
		t.Helper()
		out, err := run(t, setUpKeysCommand, "keys", "", append(args, "--db", db)...)
		if err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if rows := keysTable(t, keys("list")); len(rows) != 0 {
		t.Fatalf("keys in a new store: %v", rows)
	}

	out := keys("rotate", "--immediately")
	m := regexp.MustCompile(`^new RS256 signing key (\S+) signs now\nrunning servers pick it up within 1m0s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("rotate printed %q", out)
	}
	first := m[1]
	rows := keysTable(t, keys("list"))
	if len(rows) != 1 || rows[0][0] != first || rows[0][1] != "signing" || rows[0][2] != "false" {
		t.Fatalf("after rotate --immediately: %v", rows)
	}

	out = keys("rotate")
	m = regexp.MustCompile(`^new RS256 signing key (\S+) is published now and signs from \S+Z\n`).FindStringSubmatch(out)
	if m == nil || m[1] == first {
		t.Fatalf("rotate printed %q", out)
	}
	rows = keysTable(t, keys("list"))
	if len(rows) != 2 {
		t.Fatalf("after rotate: %v", rows)
	}
	status := map[string]string{rows[0][0]: rows[0][1], rows[1][0]: rows[1][1]}
	if status[first] != "signing" || status[m[1]] != "announced" {
		t.Errorf("after rotate: %v, want %s signing and %s announced", rows, first, m[1])
	}
	for _, row := range rows {
		if row[5] == "-" || row[6] == "-" {
			t.Errorf("key %s has no retirement or removal time: %v", row[0], row)
		}
	}

	// --revoke: the new key alone is left; only with --immediately.
	if _, err := run(t, setUpKeysCommand, "keys", "", "rotate", "--revoke", "--db", db); err == nil {
		t.Error("rotate --revoke without --immediately ran")
	}
	m = regexp.MustCompile(`^new RS256 signing key (\S+) signs now\n`).FindStringSubmatch(keys("rotate", "--immediately", "--revoke"))
	if rows = keysTable(t, keys("list")); m == nil || len(rows) != 1 || rows[0][0] != m[1] || rows[0][1] != "signing" {
		t.Errorf("after rotate --immediately --revoke: %v", rows)
	}
}

func TestKeysCommandsConfig(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	kekFile := filepath.Join(dir, "kek")
	if err := os.WriteFile(kekFile, []byte(hex.EncodeToString(testKEK)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	config := "{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite " + db +
		"\n\t\tsigning_keys {\n\t\t\tperiod off\n\t\t\tcheck_interval 30s\n\t\t\tencryption_key_file " + kekFile + "\n\t\t}\n\t}\n}\n"
	if err := os.WriteFile(caddyfile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, setUpKeysCommand, "keys", "", "rotate", "--immediately", "--config", caddyfile)
	if err != nil {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	if !strings.Contains(out, "within 30s") {
		t.Errorf("rotate printed %q, want the config's check interval", out)
	}
	out, err = run(t, setUpKeysCommand, "keys", "", "list", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	rows := keysTable(t, out)
	if len(rows) != 1 || rows[0][1] != "signing" || rows[0][2] != "true" || rows[0][5] != "-" {
		t.Errorf("keys %v, want one encrypted signing key that never retires (period off)", rows)
	}

	// Without the key encryption key, the encrypted key cannot be rotated.
	if out, err := run(t, setUpKeysCommand, "keys", "", "rotate", "--db", db); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("rotate without the key encryption key: %v\n%s", err, out)
	}
	// A missing key file is named.
	os.Remove(kekFile)
	if _, err := run(t, setUpKeysCommand, "keys", "", "rotate", "--config", caddyfile); err == nil || !strings.Contains(err.Error(), kekFile) {
		t.Errorf("rotate with a missing key file: %v", err)
	}
}

// `keys rotate` rotates every algorithm of the config, or the one --alg
// names, and `keys list` shows each key's algorithm. (It failed with --alg
// ignored: the ES256 rotation rotated the RS256 key too.)
func TestKeysRotatePerAlgorithm(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	caddyfile := filepath.Join(dir, "Caddyfile")
	config := "{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite " + db +
		"\n\t\tsigning_keys {\n\t\t\talgorithms RS256 ES256\n\t\t}\n\t}\n}\n"
	if err := os.WriteFile(caddyfile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := func(args ...string) string {
		t.Helper()
		out, err := run(t, setUpKeysCommand, "keys", "", append(args, "--config", caddyfile)...)
		if err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	out := keys("rotate", "--immediately")
	if !regexp.MustCompile(`^new RS256 signing key \S+ signs now\nnew ES256 signing key \S+ signs now\n`).MatchString(out) {
		t.Fatalf("rotate printed %q", out)
	}
	m := regexp.MustCompile(`^new ES256 signing key (\S+) signs now\n`).FindStringSubmatch(keys("rotate", "--alg", "ES256", "--immediately"))
	if m == nil {
		t.Fatal("rotate --alg ES256 named no ES256 key")
	}
	count := map[string]int{}
	for _, row := range keysTable(t, keys("list")) {
		count[row[7]]++
		if row[0] == m[1] && (row[7] != "ES256" || row[1] != "signing") {
			t.Errorf("the new ES256 key: %v", row)
		}
	}
	if count["RS256"] != 1 || count["ES256"] != 2 {
		t.Errorf("keys by algorithm %v, want one RS256 and two ES256", count)
	}
	if out, err := run(t, setUpKeysCommand, "keys", "", "rotate", "--alg", "EdDSA", "--config", caddyfile); err == nil {
		t.Errorf("rotated EdDSA, which the config keeps no keys for: %s", out)
	}
}
