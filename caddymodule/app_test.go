package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/verify"
)

// TestCustomVerifierInProcess provisions an app whose verifier differs
// from the identity server's own (a longer leeway): it is a verifier of its
// own, reading the server's keys in-process and the store's revocations,
// and Cleanup ends its loop.
func TestCustomVerifierInProcess(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	app := &App{
		Issuer:         "http://localhost:8080",
		StoreRaw:       json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, filepath.Join(t.TempDir(), "gatehouse.db"))),
		Clients:        []Client{{ID: "svc", SecretSHA256: []string{demoSecretSHA256}, GrantTypes: []string{"client_credentials"}, Scopes: []string{"Service/Market"}}},
		VerifierConfig: &VerifierConfig{Leeway: caddy.Duration(30 * time.Second)},
	}
	if err := app.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	if err := app.Validate(); err != nil {
		t.Fatal(err)
	}
	v := app.Verifier()
	if v == nil || v == app.Server().Verifier() {
		t.Fatal("the app uses the server's verifier for a custom check")
	}
	idp := httptest.NewServer(app.Server())
	defer idp.Close()

	status, body := postForm(t, idp.URL+"/connect/token", "svc:demo-secret", url.Values{"grant_type": {"client_credentials"}})
	if status != http.StatusOK {
		t.Fatalf("token: %d %s", status, body)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(context.Background(), tok.AccessToken)
	if err != nil || id.Subject != "svc" {
		t.Fatalf("verify: %+v, %v", id, err)
	}
	status, body = postForm(t, idp.URL+"/connect/revocation", "svc:demo-secret", url.Values{"token": {tok.AccessToken}})
	if status != http.StatusOK {
		t.Fatalf("revocation: %d %s", status, body)
	}
	// This verifier re-reads the revocations every 5s.
	deadline := time.Now().Add(3 * verify.DefaultRevocationRefresh)
	for {
		_, err = v.Verify(context.Background(), tok.AccessToken)
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e, ok := errors.AsType[*verify.Error](err); !ok || e.Reason != verify.ReasonRevoked {
		t.Errorf("revoked token: %v, want refused as revoked", err)
	}

	done := make(chan struct{})
	go func() { app.Cleanup(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Cleanup did not end the verifier's loop")
	}
	if app.Verifier() != nil || app.Server() != nil {
		t.Error("Cleanup left the verifier or the server")
	}
}

// TestUsersFileSubjectOfClientRefused: a users file that gives a user a
// client's ID for subject does not load (a client_credentials token's sub
// is its client's ID: the two would be one principal).
func TestUsersFileSubjectOfClientRefused(t *testing.T) {
	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users.json")
	hash := "$argon2id$v=19$m=65536,t=3,p=2$c29tZXNhbHRzb21lc2FsdA$0q3Zl3mB6pQxJqYqS8m9yq3m1vVv0a1x6uJ8h3pQeWk"
	for _, tt := range []struct {
		subject string
		ok      bool
	}{{"SVC", false}, {"svc-user", true}} {
		body := fmt.Sprintf(`{"users": [{"username": "mallory", "subject": %q, "password_hash": %q, "scopes": ["Service/Market"]}]}`, tt.subject, hash)
		if err := os.WriteFile(usersFile, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		app := &App{
			Issuer:    "http://localhost:8080",
			StoreRaw:  json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, filepath.Join(dir, tt.subject+".db"))),
			UsersFile: usersFile,
			Clients:   []Client{{ID: "svc", SecretSHA256: []string{demoSecretSHA256}, GrantTypes: []string{"client_credentials"}, Scopes: []string{"Service/Market"}}},
		}
		err := app.Provision(ctx)
		_ = app.Cleanup()
		cancel()
		switch {
		case tt.ok && err != nil:
			t.Errorf("subject %q: %v", tt.subject, err)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), `user "mallory" has the subject "SVC", which names client "svc"`)):
			t.Errorf("subject %q, a client's ID: provision error %v", tt.subject, err)
		}
	}
}
