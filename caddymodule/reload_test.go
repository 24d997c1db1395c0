package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/store"
)

// TestReloadSharesStore runs Caddy in-process: it loads a config, reloads a
// changed one (a client added), then a broken one, and checks that the
// store stays open and shared across the reloads, that the signing keys and
// the server secrets survive (a refresh token issued before a reload still
// refreshes after it), and that stopping Caddy closes the store.
func TestReloadSharesStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dbPath := filepath.Join(t.TempDir(), "gatehouse.db")
	usersFile, err := filepath.Abs("../examples/users.json")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	key := "sqlite:" + dbPath

	demoApp := Client{
		ID: "demo-app", Public: true,
		GrantTypes: []string{"password", "refresh_token"},
		Scopes:     []string{"openid", "offline_access", "Service/Market"},
	}
	demoService := Client{
		ID: "demo-service", SecretSHA256: []string{demoSecretSHA256},
		GrantTypes: []string{"client_credentials"}, Scopes: []string{"Service/Market"},
	}
	config := func(clients ...Client) []byte {
		app := App{
			Issuer:    base,
			UsersFile: usersFile,
			StoreRaw:  json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, dbPath)),
			Clients:   clients,
		}
		cfg := map[string]any{
			"admin":   map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
			"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"level": "ERROR"}}},
			"apps": map[string]any{
				"gatehouse": app,
				"http": map[string]any{"servers": map[string]any{"srv0": map[string]any{
					"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
					"routes":          []any{map[string]any{"handle": []any{map[string]any{"handler": "gatehouse_identity"}}}},
					"automatic_https": map[string]any{"disable": true},
				}}},
			},
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// Config A.
	if err := caddy.Load(config(demoApp), true); err != nil {
		t.Fatalf("loading config A: %v", err)
	}
	t.Cleanup(func() { caddy.Stop() })
	stA := pooled(t, key)
	keysA := signingKeyIDs(t, stA)
	if len(keysA) == 0 {
		t.Fatal("no signing key in the store after config A")
	}
	if status, _ := get(t, base+"/.well-known/openid-configuration"); status != http.StatusOK {
		t.Fatalf("discovery: status %d", status)
	}
	status, body := postForm(t, base+"/connect/token", "", url.Values{
		"grant_type": {"password"}, "username": {"demo"}, "password": {"demo"},
		"client_id": {"demo-app"}, "scope": {"openid offline_access Service/Market"},
	})
	if status != http.StatusOK {
		t.Fatalf("password grant under config A: status %d: %s", status, body)
	}
	var tokA struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &tokA); err != nil || tokA.RefreshToken == "" {
		t.Fatalf("password grant under config A: no refresh token (%v): %s", err, body)
	}

	// Config B: demo-service added.
	if err := caddy.Load(config(demoApp, demoService), false); err != nil {
		t.Fatalf("loading config B: %v", err)
	}
	if stB := pooled(t, key); stB != stA {
		t.Fatal("config B opened another store instead of sharing config A's")
	}
	if keysB := signingKeyIDs(t, stA); !slices.Equal(keysA, keysB) {
		t.Errorf("signing keys changed across the reload: %v, then %v", keysA, keysB)
	}
	status, body = postForm(t, base+"/connect/token", "demo-service:demo-secret", url.Values{"grant_type": {"client_credentials"}})
	if status != http.StatusOK {
		t.Errorf("client credentials of the added client: status %d: %s", status, body)
	}
	status, body = postForm(t, base+"/connect/token", "", url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {tokA.RefreshToken}, "client_id": {"demo-app"},
	})
	if status != http.StatusOK {
		t.Errorf("refresh under config B of a token issued under config A: status %d: %s", status, body)
	}

	// Config C is broken (its Provision fails): B stays, and so does the store.
	broken := demoService
	broken.ID, broken.SecretSHA256 = "broken", []string{"not-a-digest"}
	if err := caddy.Load(config(demoApp, demoService, broken), false); err == nil {
		t.Fatal("broken config C loaded")
	}
	if pooled(t, key) != stA {
		t.Fatal("store replaced after a failed reload")
	}
	if status, _ := get(t, base+"/.well-known/openid-configuration"); status != http.StatusOK {
		t.Errorf("discovery after a failed reload: status %d", status)
	}

	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := stores.References(key); ok {
		t.Error("store still in the pool after Caddy stopped")
	}
}

// pooled returns the store the pool holds under key, which must be held
// exactly once.
func pooled(t *testing.T, key string) store.Store {
	t.Helper()
	if refs, ok := stores.References(key); !ok || refs != 1 {
		t.Fatalf("pool references to %s: %d, want 1", key, refs)
	}
	var st store.Store
	stores.Range(func(k, v any) bool {
		if k == key {
			st = v.(pooledStore).Store
			return false
		}
		return true
	})
	return st
}

func signingKeyIDs(t *testing.T, st store.Store) []string {
	t.Helper()
	keys, err := st.SigningKeys(context.Background())
	if err != nil {
		t.Fatalf("reading signing keys: %v", err)
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return ids
}
