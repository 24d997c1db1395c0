package identity

import "testing"

func TestIssuerValidation(t *testing.T) {
	for _, iss := range []string{"", "localhost:8080", "http://x/", "ftp://x", "http://x?a=b", "http://u@x", "http://x?"} {
		cfg := Config{Issuer: iss}
		if err := cfg.Validate(); err == nil {
			t.Errorf("issuer %q accepted", iss)
		}
	}
}
