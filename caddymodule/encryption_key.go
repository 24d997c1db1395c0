package caddymodule

import (
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/identity/keys"
)

// encryptionKey reads the key encryption key from the environment variable
// or file k names; nil when it names none. Errors name the file or the
// variable (as cfutil.Env does), never the key.
func (k *SigningKeys) encryptionKey() ([]byte, error) {
	var raw []byte
	var source string
	switch {
	case k.EncryptionKeyEnv != "":
		source = "environment variable " + k.EncryptionKeyEnv // a name: Env checked it
		v, err := cfutil.Env("signing_keys: encryption_key_env", k.EncryptionKeyEnv)
		if err != nil {
			return nil, err
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
	key, err := keys.ParseEncryptionKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("signing_keys: the key encryption key in %s: %w", source, err)
	}
	return key, nil
}
