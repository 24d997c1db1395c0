package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/mfa"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// TestUserChangesForTheAudit: each user command that changes a user or its
// second factors (mfa reset, mfa recovery-codes) leaves one pending audit
// change, stored with the change, naming the action, the user and, where
// the action sets them, the entitlements after it (none for a deleted
// user), and never a code; a command that changes nothing (mfa show) or
// fails leaves none, and a --config whose audit is off records none. It
// failed when the delete's change carried the deleted user's set, and
// when the mfa commands recorded nothing.
func TestUserChangesForTheAudit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	user := func(stdin string, args ...string) {
		t.Helper()
		if out, err := run(t, setUpUserCommand, "user", stdin, append(args, "--db", db)...); err != nil {
			t.Fatalf("user %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	pw := "a long pass phrase\n"
	user(pw, "add", "trader", "--subject", "trader-1", "--entitle", "ASX:quotes")
	user("", "entitle", "trader", "NZX:quotes")
	user("", "entitle", "trader", "NZX:quotes") // unchanged: no change
	user("", "unentitle", "trader", "ASX:quotes")
	user("", "scopes", "trader", "openid", "Service/Market")
	user(pw, "passwd", "trader")
	user("", "disable", "trader")
	user("", "enable", "trader")
	// The second factors: show changes nothing; recovery codes for a user
	// without a factor are refused; then new codes, and a reset.
	user("", "mfa", "trader", "show")
	if out, err := run(t, setUpUserCommand, "user", "", "mfa", "trader", "recovery-codes", "--db", db); err == nil {
		t.Fatalf("recovery codes without a factor succeeded: %s", out)
	}
	withStore(t, db, func(st store.Store) {
		if err := st.PutTOTP(t.Context(), store.TOTPFactor{Subject: "trader-1", Secret: make([]byte, mfa.SecretBytes), Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	})
	user("", "mfa", "trader", "recovery-codes")
	user("", "mfa", "trader", "reset")
	user("", "delete", "trader")
	for _, args := range [][]string{{"entitle", "nobody", "ASX:quotes"}, {"mfa", "nobody", "reset"}, {"mfa", "nobody", "recovery-codes"}} {
		if out, err := run(t, setUpUserCommand, "user", "", append(args, "--db", db)...); err == nil {
			t.Fatalf("user %s succeeded: %s", strings.Join(args, " "), out)
		}
	}

	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	changes, err := st.ClaimAuditChanges(context.Background(), "test", now, now.Add(-time.Minute), 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ids := map[string]bool{}
	for _, c := range changes {
		line := c.Action + " " + c.Username + " " + c.Subject
		if c.Entitlements != nil {
			line += " holds [" + strings.Join(c.Entitlements, " ") + "]"
		}
		if c.Scopes != nil {
			line += " scopes [" + strings.Join(c.Scopes, " ") + "]"
		}
		got = append(got, line)
		if c.ID == "" || ids[c.ID] || now.Sub(c.Time) > time.Minute || c.Time.After(now) {
			t.Errorf("change %+v: want a fresh id and the time of the command", c)
		}
		ids[c.ID] = true
	}
	want := []string{
		"add trader trader-1 holds [ASX:quotes]",
		"entitle trader trader-1 holds [ASX:quotes NZX:quotes]",
		"unentitle trader trader-1 holds [NZX:quotes]",
		"scopes trader trader-1 scopes [openid Service/Market]",
		"password trader trader-1",
		"disable trader trader-1",
		"enable trader trader-1",
		"mfa_recovery_codes trader trader-1",
		"mfa_reset trader trader-1",
		"delete trader trader-1 holds []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pending audit changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A configuration whose audit is off: nothing pending.
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte("{\n\tgatehouse {\n\t\tstore sqlite "+filepath.Join(dir, "off.db")+"\n\t}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, setUpUserCommand, "user", pw, "add", "viewer", "--config", cfg, "--adapter", "caddyfile"); err != nil {
		t.Fatalf("add with --config: %v\n%s", err, out)
	}
	off, err := sqlite.Open(context.Background(), filepath.Join(dir, "off.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if pending, err := off.PendingAuditChanges(context.Background()); err != nil || pending {
		t.Fatalf("PendingAuditChanges with the audit off: %v, %v", pending, err)
	}
}
