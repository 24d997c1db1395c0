package keys

import (
	"testing"
	"time"
)

func TestKeyPolicyValidation(t *testing.T) {
	for name, p := range map[string]Policy{
		"announce longer than period": {Period: time.Hour, Announce: 2 * time.Hour},
		"weak keys":                   {Bits: 1024},
		"huge keys":                   {Bits: 16384},
		"short encryption key":        {EncryptionKey: []byte("short")},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
