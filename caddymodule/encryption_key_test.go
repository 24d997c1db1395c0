package caddymodule

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
)

// testKEK is a key encryption key for tests.
var testKEK = bytes.Repeat([]byte{0xa5, 0x17}, 16)

func TestEncryptionKeySources(t *testing.T) {
	dir := t.TempDir()
	hexKey := hex.EncodeToString(testKEK)
	writeFile := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := writeFile("kek", "\n  "+base64.StdEncoding.EncodeToString(testKEK)+"  \n")
	short := writeFile("short", "0123456789abcdef")
	t.Setenv("GATEHOUSE_TEST_KEK", " "+hexKey+"\n")
	t.Setenv("GATEHOUSE_TEST_SHORT_KEK", "0123456789abcdef")
	os.Unsetenv("GATEHOUSE_TEST_NO_KEK")

	tests := []struct {
		name string
		k    SigningKeys
		want string // "" when the key must load
	}{
		{"env", SigningKeys{EncryptionKeyEnv: "GATEHOUSE_TEST_KEK"}, ""},
		{"file", SigningKeys{EncryptionKeyFile: good}, ""},
		{"env not set", SigningKeys{EncryptionKeyEnv: "GATEHOUSE_TEST_NO_KEK"}, "environment variable GATEHOUSE_TEST_NO_KEK is not set or empty"},
		{"env wrong size", SigningKeys{EncryptionKeyEnv: "GATEHOUSE_TEST_SHORT_KEK"}, "in environment variable GATEHOUSE_TEST_SHORT_KEK: must be 32 bytes"},
		{"file missing", SigningKeys{EncryptionKeyFile: filepath.Join(dir, "none")}, filepath.Join(dir, "none")},
		{"file wrong size", SigningKeys{EncryptionKeyFile: short}, fmt.Sprintf("in file %q: must be 32 bytes", short)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := tt.k.keyPolicy()
			if tt.want == "" {
				if err != nil || !bytes.Equal(pol.EncryptionKey, testKEK) {
					t.Fatalf("key %x, %v; want %x", pol.EncryptionKey, err, testKEK)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("the error %q shows the key", err)
			}
		})
	}
	if pol, err := (*SigningKeys)(nil).keyPolicy(); err != nil || pol.EncryptionKey != nil {
		t.Errorf("no signing_keys: %+v, %v", pol, err)
	}
}

// TestProvisionEncryptsKeys provisions the app with a key encryption key
// from the environment: the signing key it creates is stored encrypted,
// and a server without the key cannot start on that store.
func TestProvisionEncryptsKeys(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	t.Setenv("GATEHOUSE_TEST_KEK", base64.RawURLEncoding.EncodeToString(testKEK))
	provision := func(keys *SigningKeys) error {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		defer cancel()
		app := &App{
			Issuer:      "http://localhost:8080",
			StoreRaw:    json.RawMessage(fmt.Sprintf(`{"backend": "sqlite", "path": %q}`, db)),
			SigningKeys: keys,
		}
		err := app.Provision(ctx)
		if cerr := app.Cleanup(); cerr != nil {
			t.Errorf("cleanup: %v", cerr)
		}
		return err
	}
	if err := provision(&SigningKeys{EncryptionKeyEnv: "GATEHOUSE_TEST_KEK"}); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := keys.List(context.Background(), st, time.Now())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || !keys[0].Encrypted || keys[0].Status != "signing" {
		t.Fatalf("keys %+v, want one encrypted signing key", keys)
	}
	if err := provision(nil); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("a server without the key encryption key started on encrypted keys (%v)", err)
	}
	if err := provision(&SigningKeys{EncryptionKeyEnv: "GATEHOUSE_TEST_NO_KEK"}); err == nil || !strings.Contains(err.Error(), "GATEHOUSE_TEST_NO_KEK") {
		t.Errorf("error %v, want one naming the missing variable", err)
	}
}
