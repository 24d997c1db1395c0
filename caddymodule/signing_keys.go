package caddymodule

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/gatehouse/gatehouse/identity"
)

// SigningKeys is the signing-key lifecycle: a new key is announced (published
// in the key set) before it signs, signs for a period, then stays published
// after it retires until every token it signed has expired. Every instance
// sharing the store follows the same schedule.
type SigningKeys struct {
	// Period is how long a key signs before its successor takes over.
	// Default 720h (30 days). Negative (Caddyfile: "off"): no automatic
	// rotation; a key signs until `gatehouse keys rotate`.
	Period caddy.Duration `json:"period,omitempty"`

	// Announce is how long a new key is published before it signs, so that
	// verifiers caching the key set know it in time. Default 24h; must be
	// shorter than the period.
	Announce caddy.Duration `json:"announce,omitempty"`

	// CheckInterval is how often each instance re-reads the keys from the
	// store and applies the schedule; a rotation made with `gatehouse keys
	// rotate` reaches running servers within it. Default 1m.
	CheckInterval caddy.Duration `json:"check_interval,omitempty"`

	// Bits is the RSA modulus size of new keys, at least 2048. Default
	// 2048.
	Bits int `json:"bits,omitempty"`

	// EncryptionKeyEnv names the environment variable that holds the key
	// encryption key: 32 bytes as 64 hex digits or base64 (standard or
	// URL alphabet, padded or not). When a key encryption key is given,
	// new private keys are stored encrypted with AES-256-GCM (keys stored
	// in the clear still load). Default: none (private keys stored in the
	// clear). Losing the key makes the stored signing keys unusable. The
	// key itself never goes into the configuration.
	EncryptionKeyEnv string `json:"encryption_key_env,omitempty"`

	// EncryptionKeyFile is the path of a file that holds the key
	// encryption key, in the same forms as EncryptionKeyEnv (surrounding
	// whitespace is ignored). Keep it readable by the server only. Excludes
	// EncryptionKeyEnv. Default: none.
	EncryptionKeyFile string `json:"encryption_key_file,omitempty"`
}

// Defaults of SigningKeys, as identity applies them.
const (
	defaultKeyPeriod   = 30 * 24 * time.Hour
	defaultKeyAnnounce = 24 * time.Hour
	defaultKeyCheck    = time.Minute
)

// validate checks k.
func (k *SigningKeys) validate() error {
	if k == nil {
		return nil
	}
	if err := errors.Join(
		checkDuration("signing_keys.announce", k.Announce),
		checkDuration("signing_keys.check_interval", k.CheckInterval),
	); err != nil {
		return err
	}
	period, announce := time.Duration(k.Period), time.Duration(k.Announce)
	if period == 0 {
		period = defaultKeyPeriod
	}
	if announce == 0 {
		announce = defaultKeyAnnounce
	}
	if period > 0 && announce >= period {
		return fmt.Errorf("signing_keys: announce %v must be shorter than period %v", announce, period)
	}
	if k.Bits != 0 && (k.Bits < 2048 || k.Bits > 8192) {
		return fmt.Errorf("signing_keys: bits must be 2048 to 8192, got %d", k.Bits)
	}
	if k.EncryptionKeyEnv != "" && k.EncryptionKeyFile != "" {
		return errors.New("signing_keys: encryption_key_env and encryption_key_file exclude each other")
	}
	return nil
}

// keyPolicy converts k, reading the key encryption key; nil is the default
// policy. The retention is left for identity to compute.
func (k *SigningKeys) keyPolicy() (identity.KeyPolicy, error) {
	if k == nil {
		return identity.KeyPolicy{}, nil
	}
	kek, err := k.encryptionKey()
	if err != nil {
		return identity.KeyPolicy{}, err
	}
	return identity.KeyPolicy{
		Period:        time.Duration(k.Period),
		Announce:      time.Duration(k.Announce),
		CheckInterval: time.Duration(k.CheckInterval),
		Bits:          k.Bits,
		EncryptionKey: kek,
	}, nil
}

// EffectiveAnnounce is how long a new key is published before it signs:
// Announce, or its default. k may be nil (all defaults).
func (k *SigningKeys) EffectiveAnnounce() time.Duration {
	if k == nil || k.Announce <= 0 {
		return defaultKeyAnnounce
	}
	return time.Duration(k.Announce)
}

// EffectiveCheckInterval is how often the servers re-read the keys:
// CheckInterval, or its default. k may be nil (all defaults).
func (k *SigningKeys) EffectiveCheckInterval() time.Duration {
	if k == nil || k.CheckInterval <= 0 {
		return defaultKeyCheck
	}
	return time.Duration(k.CheckInterval)
}

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
	identity.KeyEncryptionKeySize, 2*identity.KeyEncryptionKeySize)

// decodeEncryptionKey decodes a key encryption key written as 64 hex digits
// or as base64 (standard or URL alphabet, padded or not).
func decodeEncryptionKey(s string) ([]byte, error) {
	if len(s) == 2*identity.KeyEncryptionKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) == identity.KeyEncryptionKeySize {
				return b, nil
			}
			clear(b)
		}
	}
	return nil, errEncryptionKeyForm
}
