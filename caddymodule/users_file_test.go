package caddymodule

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/mfa"
)

// TestUsersFileSeedsTOTP: a start enrols the users file's totp_secret for
// a user without a TOTP factor (its codes pass), and a later start with
// another secret in the file keeps the factor the user has. It failed when
// Provision did not call seedFactors (no factor) and when Seed replaced a
// factor (the second secret's code passed).
func TestUsersFileSeedsTOTP(t *testing.T) {
	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users.json")
	hash := "$argon2id$v=19$m=65536,t=3,p=2$c29tZXNhbHRzb21lc2FsdA$0q3Zl3mB6pQxJqYqS8m9yq3m1vVv0a1x6uJ8h3pQeWk"
	first, second := bytes.Repeat([]byte{0x5a}, 20), bytes.Repeat([]byte{0xa5}, 20)
	start := func(secret []byte) (*App, func()) {
		b32 := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)
		body := fmt.Sprintf(`{"users": [{"username": "trader", "subject": "sub-trader", "password_hash": %q, "totp_secret": %q},
			{"username": "demo", "subject": "sub-demo", "password_hash": %q}]}`, hash, b32, hash)
		if err := os.WriteFile(usersFile, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		app := &App{
			Issuer:    "http://localhost:8080",
			StoreRaw:  json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, filepath.Join(dir, "gatehouse.db"))),
			UsersFile: usersFile,
		}
		if err := app.Provision(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		return app, func() { _ = app.Cleanup(); cancel() }
	}
	ctx := t.Context()
	now := time.Now()

	app, stop := start(first)
	trader, err := app.store.User(ctx, "trader")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Server().Factors().CheckTOTP(ctx, trader, mfa.Code(first, mfa.Step(now)), "192.0.2.1"); err != nil {
		t.Fatalf("a code of the seeded secret: %v", err)
	}
	if st, err := app.Server().Factors().Status(ctx, "sub-demo"); err != nil || st.TOTP {
		t.Fatalf("demo, with no totp_secret: %+v, %v", st, err)
	}
	stop()

	app, stop = start(second)
	defer stop()
	if err := app.Server().Factors().CheckTOTP(ctx, trader, mfa.Code(second, mfa.Step(now)+1), "192.0.2.1"); err == nil {
		t.Fatal("the file's new secret replaced the factor the user had")
	}
	if err := app.Server().Factors().CheckTOTP(ctx, trader, mfa.Code(first, mfa.Step(now)+1), "192.0.2.1"); err != nil {
		t.Fatalf("the factor seeded first, after a restart: %v", err)
	}
}
