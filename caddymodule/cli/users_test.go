package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/users"
)

func TestUserCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "data", "gatehouse.db")
	user := func(stdin string, args ...string) string {
		t.Helper()
		out, err := run(t, setUpUserCommand, "user", stdin, append(args, "--db", db)...)
		if err != nil {
			t.Fatalf("user %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	out := user("s3cret s3cret s3cret\n", "add", "alice", "--name", "Alice A", "--email", "alice@example.com",
		"--scope", "Service/Market", "--scope", "openid", "--role", "analyst")
	if !regexp.MustCompile(`added user alice with subject [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n`).MatchString(out) {
		t.Errorf("add printed %q", out)
	}
	user("a long pass phrase\n", "add", "bob", "--subject", "bob-1")
	// A clash is named in the user's terms: the name, or the subject the
	// user chose, never a subject made up that the user never typed.
	// It failed when: adding bob again said the username or subject
	// "976b…" (a new random subject) was taken.
	if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "bob", "--db", db); err == nil || !strings.Contains(err.Error(), `a user called "bob" exists already`) {
		t.Errorf("adding bob twice: %v\n%s", err, out)
	}
	if _, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "bobby", "--subject", "bob-1", "--db", db); err == nil || !strings.Contains(err.Error(), `the subject "bob-1" is user "bob"'s`) {
		t.Errorf("adding a user with bob's subject: %v", err)
	}
	if _, err := run(t, setUpUserCommand, "user", "", "add", "carol", "--db", db); err == nil {
		t.Error("adding a user with an empty password succeeded")
	}
	if _, err := run(t, setUpUserCommand, "user", "", "disable", "nobody", "--db", db); err == nil {
		t.Error("disabling an unknown user succeeded")
	}
	user("n3w pass phrase here\r\n", "passwd", "alice")
	user("", "disable", "bob")

	list := user("", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 3 {
		t.Fatalf("list printed %d lines, want 3:\n%s", len(lines), list)
	}
	if f := strings.Fields(lines[1]); f[0] != "alice" || f[len(f)-1] != "false" || !strings.Contains(lines[1], "Service/Market openid") {
		t.Errorf("alice listed as %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "bob" || f[1] != "bob-1" || f[len(f)-1] != "true" {
		t.Errorf("bob listed as %q", lines[2])
	}
	if strings.Contains(list, "$argon2id$") {
		t.Error("list shows password hashes")
	}

	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	alice, err := st.User(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := users.VerifyPassword(alice.PasswordHash, "n3w pass phrase here"); !ok {
		t.Error("passwd did not set the new password")
	}
	if alice.DisplayName != "Alice A" || alice.Email != "alice@example.com" || len(alice.Roles) != 1 {
		t.Errorf("alice stored as %+v", alice)
	}
	// passwd and disable ended the sessions of alice and bob; enable ends
	// nothing.
	ended := map[string]bool{}
	revs, err := st.Revocations(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range revs {
		ended[r.Subject] = true
	}
	if !ended[alice.Subject] || !ended["bob-1"] || len(revs) != 2 {
		t.Errorf("sessions ended: %+v, want alice's and bob's", revs)
	}
	user("", "enable", "bob")
	if bob, _ := st.User(context.Background(), "bob"); bob.Disabled {
		t.Error("enable left bob disabled")
	}
	if revs, _ := st.Revocations(context.Background(), time.Now()); len(revs) != 2 {
		t.Errorf("enable changed the revocations: %+v", revs)
	}

	// scopes sets them (none when none is given) and ends the sessions.
	before := time.Now()
	user("", "scopes", "bob", "Service/News", "openid")
	if bob, _ := st.User(context.Background(), "bob"); strings.Join(bob.Scopes, " ") != "Service/News openid" {
		t.Errorf("bob's scopes %q", bob.Scopes)
	}
	user("", "scopes", "alice")
	if alice, _ := st.User(context.Background(), "alice"); len(alice.Scopes) != 0 {
		t.Errorf("alice's scopes %q, want none", alice.Scopes)
	}
	if _, err := run(t, setUpUserCommand, "user", "", "scopes", "bob", "a b", "--db", db); err == nil {
		t.Error("a scope with a space was set")
	}
	revs, _ = st.Revocations(context.Background(), time.Now())
	for _, r := range revs {
		if r.NotBefore.Before(before) {
			t.Errorf("scopes left the sessions of %s before %v: %+v", r.Subject, before, r)
		}
	}
	if len(revs) != 2 {
		t.Errorf("revocations after scopes: %+v", revs)
	}

	// delete removes the user and ends its sessions; its name is free, its
	// subject given to no one again.
	before = time.Now().Truncate(time.Millisecond) // the store keeps milliseconds
	if out := user("", "delete", "bob"); out != "deleted user bob (subject bob-1) and ended its sessions\n" {
		t.Errorf("delete printed %q", out)
	}
	if _, err := st.User(context.Background(), "bob"); err == nil {
		t.Error("bob is still in the store")
	}
	if strings.Contains(user("", "list"), "bob") {
		t.Error("bob is still listed")
	}
	revs, _ = st.Revocations(context.Background(), time.Now())
	ended = map[string]bool{}
	for _, r := range revs {
		ended[r.Subject] = r.Subject == "bob-1" && !r.NotBefore.Before(before) && r.ExpiresAt.After(time.Now().Add(24*time.Hour))
	}
	if !ended["bob-1"] {
		t.Errorf("delete did not end bob's sessions: %+v", revs)
	}
	if out, err := run(t, setUpUserCommand, "user", "", "delete", "bob", "--db", db); err == nil || !strings.Contains(err.Error(), `no user "bob"`) {
		t.Errorf("deleting bob twice: %v\n%s", err, out)
	}
	if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "bob", "--subject", "bob-1", "--db", db); err == nil ||
		!strings.Contains(err.Error(), `the subject "bob-1" was a deleted user's`) {
		t.Errorf("adding a user with a deleted user's subject: %v\n%s", err, out)
	}
	user("a long pass phrase\n", "add", "bob", "--subject", "bob-2")
}

func TestUserCommandsConfig(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	caddyfile := filepath.Join(dir, "Caddyfile")
	err := os.WriteFile(caddyfile, []byte("{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite "+db+
		"\n\t\tclient svc {\n\t\t\tsecret_sha256 "+strings.Repeat("ab", 32)+"\n\t\t\tgrant_types client_credentials\n\t\t\tscopes Service/Market\n\t\t}\n\t}\n}\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// A client's ID is no user's subject: a client_credentials token's sub
	// is its client's ID.
	if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "eve", "--subject", "Svc", "--config", caddyfile); err == nil ||
		!strings.Contains(err.Error(), `the subject "Svc" names client "svc"`) {
		t.Errorf("add with a client's ID for subject: %v\n%s", err, out)
	}
	if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", "dora", "--config", caddyfile); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	out, err := run(t, setUpUserCommand, "user", "", "list", "--db", db)
	if err != nil || !strings.Contains(out, "dora") {
		t.Errorf("the user added through --config is not in the store it names (%v):\n%s", err, out)
	}
	if strings.Contains(out, "eve") {
		t.Errorf("the user refused for its subject was added:\n%s", out)
	}
	if _, err := run(t, setUpUserCommand, "user", "", "list", "--db", db, "--config", caddyfile); err == nil {
		t.Error("--db with --config accepted")
	}
}

// TestUserDeleteListedInUsersFile: deleting a user warns when the config's
// users file lists its subject (no start adds it again, each warns) or its
// name with another subject (the next start adds that user again); deleting
// one it lists neither way does not warn.
func TestUserDeleteListedInUsersFile(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	hash, err := users.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.json")
	err = os.WriteFile(usersFile, []byte(`{"users": [{"username": "frank", "subject": "frank-1", "password_hash": "`+hash+`"},
		{"username": "hugo", "subject": "hugo-file", "password_hash": "`+hash+`"}]}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	err = os.WriteFile(caddyfile, []byte("{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite "+db+
		"\n\t\tusers_file "+usersFile+"\n\t}\n}\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"frank", "gina", "hugo"} {
		if out, err := run(t, setUpUserCommand, "user", "a long pass phrase\n", "add", name, "--subject", name+"-1", "--config", caddyfile); err != nil {
			t.Fatalf("add %s: %v\n%s", name, err, out)
		}
	}
	for _, tt := range []struct{ name, warning string }{
		{"frank", "warning: the users file " + usersFile + " lists frank with the deleted subject: remove it from the file"},
		{"hugo", "warning: the users file " + usersFile + " lists hugo with another subject: the next start adds it again"},
		{"gina", ""},
	} {
		out, err := run(t, setUpUserCommand, "user", "", "delete", tt.name, "--config", caddyfile)
		if err != nil || !strings.Contains(out, "deleted user "+tt.name) ||
			tt.warning != "" && !strings.Contains(out, tt.warning) || tt.warning == "" && strings.Contains(out, "warning") {
			t.Errorf("delete %s: %v\n%s", tt.name, err, out)
		}
	}
}

func TestUserHash(t *testing.T) {
	out, err := run(t, setUpUserCommand, "user", "correct horse battery\n", "hash")
	if err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(out)
	if ok, err := users.VerifyPassword(hash, "correct horse battery"); !ok || err != nil {
		t.Errorf("hash %q does not verify (%v)", hash, err)
	}
}

// TestPasswordLength: a password set by add, passwd or hash has at least
// min_password_length characters (15 by default; Unicode code points, so
// 15 accented letters are 15) and at most 256, whatever they are; a config
// may lower the minimum. 64 characters are accepted.
// It failed when: a one-character password was accepted.
func TestPasswordLength(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	for i, tt := range []struct {
		pw string
		ok bool
	}{
		{"x", false}, {strings.Repeat("a", 14), false}, {strings.Repeat("a", 15), true},
		{strings.Repeat("é", 15), true}, {strings.Repeat("é", 14), false},
		{strings.Repeat("Z", 64), true}, {strings.Repeat("q", 256), true}, {strings.Repeat("q", 257), false},
		{"               ", true}, // no composition rule
	} {
		for _, args := range [][]string{{"hash"}, {"add", "u" + strconv.Itoa(i), "--db", db}} {
			out, err := run(t, setUpUserCommand, "user", tt.pw+"\n", args...)
			if (err == nil) != tt.ok {
				t.Errorf("%s with %d characters: %v, want accepted %v\n%s", args[0], utf8.RuneCountInString(tt.pw), err, tt.ok, out)
			}
		}
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte("{\n\tgatehouse {\n\t\tissuer http://localhost\n\t\tstore sqlite "+db+
		"\n\t\tmin_password_length 4\n\t}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, setUpUserCommand, "user", "abcd\n", "hash", "--config", caddyfile); err != nil {
		t.Errorf("a 4-character password with min_password_length 4: %v\n%s", err, out)
	}
	if _, err := run(t, setUpUserCommand, "user", "abc\n", "hash", "--config", caddyfile); err == nil {
		t.Error("a 3-character password with min_password_length 4 was accepted")
	}
}
