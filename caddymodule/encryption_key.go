package caddymodule

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse/gatehouse/identity/keys"
)

// encryptionKey reads the key encryption key from the environment variable
// or file k names; nil when it names none. Errors name the variable or file,
// never the key.
func (k *SigningKeys) encryptionKey() ([]byte, error) {
	var raw []byte
	var source string
	switch {
	case k.EncryptionKeyEnv != "":
		source = "environment variable " + k.EncryptionKeyEnv
		v, ok := os.LookupEnv(k.EncryptionKeyEnv)
		if !ok {
			return nil, fmt.Errorf("signing_keys: the key encryption key's %s is not set", source)
		}
		raw = []byte(v)
	case k.EncryptionKeyFile != "":
		source = fmt.Sprintf("file %q", k.EncryptionKeyFile)
		b, err := os.ReadFile(k.EncryptionKeyFile)
		if err != nil {
			return nil, fmt.Errorf("signing_keys: reading the key encryption key: %w", err)
		}
		raw = b
	default:
		return nil, nil
	}
	defer clear(raw)
	key, err := decodeEncryptionKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("signing_keys: the key encryption key in %s: %w", source, err)
	}
	return key, nil
}

// errEncryptionKeyForm says what a key encryption key must look like; it
// never carries the key.
var errEncryptionKeyForm = fmt.Errorf("must be %d bytes, as %d hex digits or base64",
	keys.EncryptionKeySize, 2*keys.EncryptionKeySize)

// decodeEncryptionKey decodes a key encryption key written as 64 hex digits
// or as base64 (standard or URL alphabet, padded or not).
func decodeEncryptionKey(s string) ([]byte, error) {
	if len(s) == 2*keys.EncryptionKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) == keys.EncryptionKeySize {
				return b, nil
			}
			clear(b)
		}
	}
	return nil, errEncryptionKeyForm
}
