package marketdata

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoCaddyImport fails when the package or its tests depend on Caddy:
// the demo-only Caddy module wraps it, never the other way round.
func TestNoCaddyImport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command(goBin, "list", "-deps", "-test", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list showed %d packages", len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/caddyserver/") {
			t.Errorf("depends on %s", dep)
		}
	}
}

// TestDemoAccountsMatchUsersFile checks DemoAccounts against the demo
// users of examples/users.json: each has accounts under their subject.
func TestDemoAccountsMatchUsersFile(t *testing.T) {
	raw, err := os.ReadFile("../users.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Users []struct {
			Username string `json:"username"`
			Subject  string `json:"subject"`
		} `json:"users"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"demo": DemoUserSubject, "trader": DemoTraderSubject}
	accounts := DemoAccounts()
	found := 0
	for _, u := range file.Users {
		subject, ok := want[u.Username]
		if !ok {
			continue
		}
		found++
		if u.Subject != subject {
			t.Errorf("user %s has subject %s in users.json, %s here", u.Username, u.Subject, subject)
		}
		if len(accounts[u.Subject]) == 0 {
			t.Errorf("user %s has no demo account", u.Username)
		}
	}
	if found != len(want) {
		t.Errorf("users.json has %d of the %d demo users", found, len(want))
	}
	if len(accounts[DemoDeskSubject]) == 0 {
		t.Errorf("the client %s has no demo account", DemoDeskSubject)
	}
	if len(accounts) != len(want)+1 {
		t.Errorf("DemoAccounts has %d owners, want %d and the desk", len(accounts), len(want))
	}
}
