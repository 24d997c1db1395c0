package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"
)

func TestClientSecret(t *testing.T) {
	out, err := run(t, setUpClientCommand, "client", "", "secret")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^client_secret: ([A-Za-z0-9_-]{43})\nsecret_sha256: ([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("printed %q", out)
	}
	sum := sha256.Sum256([]byte(m[1]))
	if hex.EncodeToString(sum[:]) != m[2] {
		t.Error("secret_sha256 is not the SHA-256 of the secret")
	}
	if other, _ := run(t, setUpClientCommand, "client", "", "secret"); other == out {
		t.Error("two secrets are the same")
	}
}
