package keys

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// testKEK is a key encryption key for tests.
var testKEK = bytes.Repeat([]byte{0xa5, 0x17}, 16)

func TestParseEncryptionKey(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"hex", hex.EncodeToString(testKEK), true},
		{"upper hex", strings.ToUpper(hex.EncodeToString(testKEK)), true},
		{"base64", base64.StdEncoding.EncodeToString(testKEK), true},
		{"base64 unpadded", base64.RawStdEncoding.EncodeToString(testKEK), true},
		{"base64 URL", base64.URLEncoding.EncodeToString(testKEK), true},
		{"base64 URL unpadded", base64.RawURLEncoding.EncodeToString(testKEK), true},
		{"16 bytes", base64.StdEncoding.EncodeToString(testKEK[:16]), false},
		{"33 bytes", base64.StdEncoding.EncodeToString(append(bytes.Clone(testKEK), 1)), false},
		{"62 hex digits", hex.EncodeToString(testKEK)[:62], false},
		{"a passphrase", "correct horse battery staple", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEncryptionKey(tt.in)
			if !tt.ok {
				if err == nil {
					t.Fatal("accepted")
				}
				if tt.in != "" && strings.Contains(err.Error(), tt.in) {
					t.Errorf("the error %q shows the key", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, testKEK) {
				t.Errorf("got %x, %v; want %x", got, err, testKEK)
			}
		})
	}
}
