package cli

import (
	"bytes"
	"encoding/base32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/mfa"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// TestUserMFA: `user mfa` shows a user's factors without the secret,
// refuses recovery codes to a user without a TOTP factor, prints a new set
// of ten once (the store's hashes match them, and no longer the set
// before), and reset removes the factor and the codes and ends the user's
// sessions and tokens (for as long as a token of an unknown config may
// live); an unknown user or action is an error. It failed when reset
// removed the TOTP factor alone (the codes were left), and when the
// service it built had no Revoke (no revocation).
func TestUserMFA(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	user := func(args ...string) string {
		t.Helper()
		out, err := run(t, setUpUserCommand, "user", "", append(args, "--db", db)...)
		if err != nil {
			t.Fatalf("user %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "erin", "--subject", "erin-1", "--db", db); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	if out := user("mfa", "erin"); out != "user erin (subject erin-1)\ntotp: none\npasskeys: 0\nrecovery codes: 0 left\n" {
		t.Errorf("show without factors: %q", out)
	}
	if out, err := run(t, setUpUserCommand, "user", "", "mfa", "erin", "recovery-codes", "--db", db); err == nil || !strings.Contains(err.Error(), "has no second factor") {
		t.Errorf("recovery codes without a TOTP factor: %v\n%s", err, out)
	}

	secret := bytes.Repeat([]byte{0x42}, mfa.SecretBytes)
	enrolled := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	withStore(t, db, func(st store.Store) {
		if err := st.PutTOTP(t.Context(), store.TOTPFactor{Subject: "erin-1", Secret: secret, Created: enrolled}); err != nil {
			t.Fatal(err)
		}
	})
	out := user("mfa", "erin", "show")
	if out != "user erin (subject erin-1)\ntotp: enrolled 2026-12-01T09:30:00Z\npasskeys: 0\nrecovery codes: 0 left\n" ||
		strings.Contains(out, base32.StdEncoding.EncodeToString(secret)[:8]) || strings.Contains(out, string(secret[:4])) {
		t.Errorf("show with a TOTP factor: %q", out)
	}

	codeForm := regexp.MustCompile(`(?m)^[0-9A-Z]{4}(-[0-9A-Z]{4}){3}$`)
	first := codeForm.FindAllString(user("mfa", "erin", "recovery-codes"), -1)
	second := codeForm.FindAllString(user("mfa", "erin", "recovery-codes"), -1)
	if len(first) != mfa.RecoveryCodes || len(second) != mfa.RecoveryCodes || first[0] == second[0] {
		t.Fatalf("recovery codes printed: %q, then %q", first, second)
	}
	withStore(t, db, func(st store.Store) {
		hashes, err := st.RecoveryCodes(t.Context(), "erin-1")
		if err != nil {
			t.Fatal(err)
		}
		if mfa.MatchRecovery(second[3], hashes) < 0 || mfa.MatchRecovery(first[3], hashes) >= 0 {
			t.Errorf("the store's codes are not the set printed last")
		}
	})
	if out := user("mfa", "erin"); !strings.Contains(out, "recovery codes: 10 left") {
		t.Errorf("show after recovery-codes: %q", out)
	}

	if out := user("mfa", "erin", "reset"); !strings.Contains(out, "removed the TOTP factor and the recovery codes of erin and ended its sessions") {
		t.Errorf("reset printed %q", out)
	}
	withStore(t, db, func(st store.Store) {
		revs, err := st.Revocations(t.Context(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ended := false
		for _, r := range revs {
			ended = ended || r.Subject == "erin-1" && r.ExpiresAt.Sub(r.NotBefore) >= sessionsUntil
		}
		if !ended {
			t.Errorf("reset left erin's sessions and tokens: revocations %+v", revs)
		}
	})
	if out := user("mfa", "erin"); out != "user erin (subject erin-1)\ntotp: none\npasskeys: 0\nrecovery codes: 0 left\n" {
		t.Errorf("show after reset: %q", out)
	}
	for _, args := range [][]string{{"mfa", "nobody"}, {"mfa", "erin", "enrol"}, {"mfa"}} {
		if out, err := run(t, setUpUserCommand, "user", "", append(args, "--db", db)...); err == nil {
			t.Errorf("user %s succeeded: %s", strings.Join(args, " "), out)
		}
	}
}

// TestUserMFAResetSeededByUsersFile: reset warns when the users file of
// --config seeds the user a totp_secret, which the next start enrols
// again, and not for a user the file seeds none.
func TestUserMFAResetSeededByUsersFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	usersFile := filepath.Join(dir, "users.json")
	err := os.WriteFile(usersFile, []byte(`{"users": [{"username": "frank", "subject": "frank-1", "password_hash": "$argon2id$v=19$m=19456,t=2,p=1$3fCrQn1uERL4bk/Vv2MXMw$4tTzQwByiXQFJvXKRdQ2hawfKPrwhVA3HOxRlvB3868",
		"totp_secret": "E33OVL22VNZZTWPFWHF7SGK5KP3FNYK6"}]}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	err = os.WriteFile(caddyfile, []byte("{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite "+db+
		"\n\t\tusers_file "+usersFile+"\n\t}\n}\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"frank", "gina"} {
		if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", name, "--subject", name+"-1", "--config", caddyfile); err != nil {
			t.Fatalf("add %s: %v\n%s", name, err, out)
		}
	}
	for _, tt := range []struct{ name, warning string }{
		{"frank", "warning: the users file " + usersFile + " seeds frank a totp_secret: the next start enrols it again"},
		{"gina", ""},
	} {
		out, err := run(t, setUpUserCommand, "user", "", "mfa", tt.name, "reset", "--config", caddyfile)
		if err != nil || tt.warning != "" && !strings.Contains(out, tt.warning) || tt.warning == "" && strings.Contains(out, "warning") {
			t.Errorf("reset %s: %v\n%s", tt.name, err, out)
		}
	}
}

// withStore runs f with the SQLite store at db open.
func withStore(t *testing.T, db string, f func(store.Store)) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f(st)
}
