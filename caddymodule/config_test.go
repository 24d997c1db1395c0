package caddymodule

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func TestVerifierConfigModes(t *testing.T) {
	on, off := true, false
	const issuer, audience = "http://localhost:8080", "gatehouse"
	tests := []struct {
		name                     string
		v                        *VerifierConfig
		remote, revocations, own bool // own: a verifier of its own, not the server's
	}{
		{"none", nil, false, true, false},
		{"same issuer and audience", &VerifierConfig{Issuer: issuer, Audience: audience}, false, true, false},
		{"revocations on", &VerifierConfig{CheckRevocations: &on}, false, true, false},
		{"revocations off", &VerifierConfig{CheckRevocations: &off}, false, false, true},
		{"other audience", &VerifierConfig{Audience: "api"}, false, true, true},
		{"leeway", &VerifierConfig{Leeway: caddy.Duration(time.Minute)}, false, true, true},
		{"cache off", &VerifierConfig{CacheSize: -1}, false, true, true},
		{"remote", &VerifierConfig{JWKSURL: "https://login.example.com/jwks"}, true, false, true},
		{"remote with revocations", &VerifierConfig{JWKSURL: "https://login.example.com/jwks", CheckRevocations: &on}, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.remote(); got != tt.remote {
				t.Errorf("remote %t, want %t", got, tt.remote)
			}
			if got := tt.v.checksRevocations(); got != tt.revocations {
				t.Errorf("checksRevocations %t, want %t", got, tt.revocations)
			}
			if got := tt.v.custom(issuer, audience); got != tt.own {
				t.Errorf("custom %t, want %t", got, tt.own)
			}
		})
	}
}
