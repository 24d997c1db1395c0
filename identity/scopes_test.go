package identity

import (
	"slices"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"a b", []string{"a", "b"}, false},
		{"  a   b a ", []string{"a", "b"}, false},
		{"Service/Market offline_access", []string{"Service/Market", "offline_access"}, false},
		{"a\tb", nil, true},
		{`a"b`, nil, true},
		{`a\b`, nil, true},
		{"caf\u00e9", nil, true},
		{strings.Repeat("s ", 10) + strings.Repeat("x", 3), []string{"s", "xxx"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseScope(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Fatalf("parseScope(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
	var many []string
	for i := range maxScopes + 1 {
		many = append(many, strings.Repeat("s", i+1))
	}
	if _, err := parseScope(strings.Join(many, " ")); err == nil {
		t.Fatal("no bound on the number of scopes")
	}
}

func TestClientConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		client  Client
		wantErr string
	}{
		{"public with secret", Client{ID: "a", Public: true, SecretHashes: [][]byte{sha("x")}}, "public client has no secret"},
		{"confidential without secret", Client{ID: "a"}, "needs a secret"},
		{"short hash", Client{ID: "a", SecretHashes: [][]byte{[]byte("x")}}, "SHA-256"},
		{"unknown grant", Client{ID: "a", Public: true, GrantTypes: []string{"magic"}}, "unknown grant"},
		{"public client credentials", Client{ID: "a", Public: true, GrantTypes: []string{GrantClientCredentials}}, "cannot use client_credentials"},
		{"default scope not allowed", Client{ID: "a", Public: true, Scopes: []string{"x"}, DefaultScopes: []string{"y"}}, "default scope"},
		{"bad origin", Client{ID: "a", Public: true, AllowedOrigins: []string{"http://x/path"}}, "not an origin"},
		{"empty id", Client{Public: true}, "empty id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Clients: []Client{tt.client}}
			_, err := newClients(&cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	cfg := Config{Clients: []Client{{ID: "a", Public: true}, {ID: "a", Public: true}}}
	if _, err := newClients(&cfg); err == nil {
		t.Fatal("duplicate client accepted")
	}
}

func TestIssuerValidation(t *testing.T) {
	for _, iss := range []string{"", "localhost:8080", "http://x/", "ftp://x", "http://x?a=b", "http://u@x"} {
		cfg := Config{Issuer: iss}
		if _, err := applyDefaults(&cfg); err == nil {
			t.Errorf("issuer %q accepted", iss)
		}
	}
}
