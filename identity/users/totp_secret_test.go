package users

import (
	"bytes"
	"encoding/base32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadTOTPSecret: a users file's totp_secret is decoded as an
// authenticator app shows it (base32 without padding, either case, spaces
// ignored), and refused, by a message that quotes none of it, when it is
// not base32 without padding or shorter than 128 bits. It failed when the
// least size was 10 bytes (an 80-bit secret accepted).
func TestLoadTOTPSecret(t *testing.T) {
	hash, _ := passwordHashes(t)
	b32 := base32.StdEncoding.WithPadding(base32.NoPadding)
	secret20 := bytes.Repeat([]byte{0xa5, 0x3c, 0x7e, 0x01}, 5)
	secret16 := secret20[:16]
	key := b32.EncodeToString(secret20)
	grouped := strings.ToLower(key[:4] + " " + key[4:8] + " " + key[8:])
	tests := []struct {
		name    string
		secret  string
		want    []byte
		wantErr string
	}{
		{"20 bytes", key, secret20, ""},
		{"lower case in groups", grouped, secret20, ""},
		{"16 bytes", b32.EncodeToString(secret16), secret16, ""},
		{"15 bytes", b32.EncodeToString(secret20[:15]), nil, "at least 16"},
		{"10 bytes", b32.EncodeToString(secret20[:10]), nil, "at least 16"},
		{"padded", base32.StdEncoding.EncodeToString(secret16), nil, "not base32"},
		{"not base32", "Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1Z1", nil, "not base32"},
		{"hex", "a53c7e01a53c7e01a53c7e01a53c7e01", nil, "not base32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "users.json")
			body := `{"users":[{"username":"a","subject":"1","password_hash":"` + hash + `"},` +
				`{"username":"b","subject":"2","password_hash":"` + hash + `","totp_secret":"` + tt.secret + `"}]}`
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := Load(p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `user "b": totp_secret`) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), tt.secret[:8]) {
					t.Fatalf("the error quotes the secret: %v", err)
				}
				return
			}
			if err != nil || len(l.Users) != 2 || len(l.TOTPSecrets) != 1 || !bytes.Equal(l.TOTPSecrets["b"], tt.want) {
				t.Fatalf("loaded %d users, secrets %x, %v", len(l.Users), l.TOTPSecrets, err)
			}
		})
	}
}
