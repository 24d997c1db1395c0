package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

const demoSecretSHA256 = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"

// validApp returns a configuration that passes Validate.
func validApp() *App {
	return &App{
		Issuer: "http://localhost:8080",
		Clients: []Client{
			{ID: "app", Public: true, GrantTypes: []string{"password", "refresh_token"}, Scopes: []string{"openid", "offline_access"}},
			{ID: "svc", SecretSHA256: []string{demoSecretSHA256}, GrantTypes: []string{"client_credentials"}},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(a *App)
		want   string // "" when valid
	}{
		{"valid", func(*App) {}, ""},
		{"issuer with path", func(a *App) { a.Issuer = "https://example.com/auth" }, ""},
		{"secret as base64", func(a *App) { a.Clients[1].SecretSHA256 = []string{"zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sosJb8="} }, ""},
		{"negative grace disables", func(a *App) { a.RefreshToken = &RefreshToken{Grace: caddy.Duration(-time.Second)} }, ""},
		{"no issuer", func(a *App) { a.Issuer = "" }, "issuer is required"},
		{"relative issuer", func(a *App) { a.Issuer = "/auth" }, "must be an absolute"},
		{"issuer trailing slash", func(a *App) { a.Issuer = "http://localhost:8080/" }, "trailing slash"},
		{"issuer other scheme", func(a *App) { a.Issuer = "ftp://localhost" }, "must be an absolute"},
		{"issuer with query", func(a *App) { a.Issuer = "https://example.com?x=1" }, "must be an absolute"},
		{"issuer with fragment", func(a *App) { a.Issuer = "https://example.com#x" }, "must be an absolute"},
		{"negative access lifetime", func(a *App) { a.AccessTokenLifetime = caddy.Duration(-time.Hour) }, "access_token_lifetime must be positive"},
		{"negative id lifetime", func(a *App) { a.IDTokenLifetime = caddy.Duration(-time.Hour) }, "id_token_lifetime must be positive"},
		{"negative sliding lifetime", func(a *App) { a.RefreshToken = &RefreshToken{SlidingLifetime: caddy.Duration(-time.Hour)} }, "refresh_token.sliding_lifetime must be positive"},
		{"sliding past absolute", func(a *App) {
			a.RefreshToken = &RefreshToken{SlidingLifetime: caddy.Duration(48 * time.Hour), AbsoluteLifetime: caddy.Duration(24 * time.Hour)}
		}, "longer than absolute_lifetime"},
		{"negative concurrency", func(a *App) { a.PasswordHashConcurrency = -1 }, "password_hash_concurrency"},
		{"client without id", func(a *App) { a.Clients[0].ID = "" }, "client 0: id is required"},
		{"duplicate client", func(a *App) { a.Clients[1].ID = "app" }, `client "app": id used twice`},
		{"confidential without secret", func(a *App) { a.Clients[1].SecretSHA256 = nil }, `client "svc": a confidential client needs a secret_sha256`},
		{"public with secret", func(a *App) { a.Clients[0].SecretSHA256 = []string{demoSecretSHA256} }, `client "app": a public client has no secret_sha256`},
		{"secret not a digest", func(a *App) { a.Clients[1].SecretSHA256 = []string{"demo-secret"} }, "neither 64 hex digits nor the base64"},
		{"secret short hex", func(a *App) { a.Clients[1].SecretSHA256 = []string{demoSecretSHA256[:62]} }, "neither 64 hex digits"},
		{"unknown grant", func(a *App) { a.Clients[0].GrantTypes = []string{"passwd"} }, `unknown grant type "passwd"`},
		{"public client credentials", func(a *App) { a.Clients[0].GrantTypes = []string{"client_credentials"} }, "public client cannot use client_credentials"},
		{"default scope not allowed", func(a *App) { a.Clients[0].DefaultScopes = []string{"Service/Admin"} }, `default scope "Service/Admin"`},
		{"negative client lifetime", func(a *App) { a.Clients[0].AccessTokenLifetime = caddy.Duration(-time.Minute) }, `client "app": access_token_lifetime must be positive`},
		{"negative client refresh", func(a *App) {
			a.Clients[0].RefreshToken = &RefreshToken{AbsoluteLifetime: caddy.Duration(-time.Minute)}
		}, `client "app": refresh_token.absolute_lifetime must be positive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := validApp()
			tt.change(a)
			err := a.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("no error, want one containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseSecretDigest(t *testing.T) {
	hexForm, err := parseSecretDigest(demoSecretSHA256)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sosJb8=", // as IdentityServer prints it
		"zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sosJb8",  // unpadded
		strings.ToUpper(demoSecretSHA256),
	} {
		got, err := parseSecretDigest(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if string(got) != string(hexForm) {
			t.Errorf("%s decodes to %x, want %x", s, got, hexForm)
		}
	}
}
