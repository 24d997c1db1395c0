package caddymodule

import (
	"slices"
	"testing"

	"github.com/gatehouse/gatehouse/identity/users"
)

// TestExampleUsersFile checks the demo users against docs/design.md ("The
// demo") and the README's table: their passwords, fixed subjects, scopes
// and market-data entitlements.
func TestExampleUsersFile(t *testing.T) {
	demoUsers, err := users.LoadFile("../examples/users.json")
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"Service/Market", "Service/News", "openid", "profile", "email", "offline_access"}
	want := map[string][]string{
		"demo":   common,
		"trader": append(slices.Clone(common), "Service/Trading", "Service/OrderPad"),
		"viewer": {"Service/Market", "openid", "profile", "email", "offline_access"},
	}
	pairs := map[string]string{"demo": "ASX:quotes", "trader": "ASX:depth ASX:quotes NZX:quotes", "viewer": ""}
	if len(demoUsers) != len(want) {
		t.Fatalf("%d users, want %d", len(demoUsers), len(want))
	}
	for _, u := range demoUsers {
		t.Run(u.Username, func(t *testing.T) {
			scopes, ok := want[u.Username]
			if !ok {
				t.Fatalf("unexpected user %q", u.Username)
			}
			if ok, err := users.VerifyPassword(u.PasswordHash, u.Username); !ok || err != nil {
				t.Errorf("password is not the username (%v)", err)
			}
			if len(u.Subject) != 36 {
				t.Errorf("subject %q is not a UUID", u.Subject)
			}
			for _, s := range scopes {
				if !slices.Contains(u.Scopes, s) {
					t.Errorf("lacks scope %s", s)
				}
			}
			if len(u.Scopes) != len(scopes) {
				t.Errorf("scopes %v, want %v", u.Scopes, scopes)
			}
			if got := u.Entitlements.String(); got != pairs[u.Username] {
				t.Errorf("entitlements %q, want %q", got, pairs[u.Username])
			}
		})
	}
}
