package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

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
	t.Setenv("KEK", strings.Repeat("ab", 32)) // the "signing keys" case names it
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
		}, "exceeds the absolute lifetime"},
		{"refresh tokens per user", func(a *App) { a.RefreshToken = &RefreshToken{MaxPerUser: 5} }, ""},
		{"negative refresh tokens per user", func(a *App) { a.RefreshToken = &RefreshToken{MaxPerUser: -1} }, "refresh tokens per user must be between 1 and 10000, got -1"},
		{"client refresh tokens per user past the most", func(a *App) {
			a.Clients[0].RefreshToken = &RefreshToken{MaxPerUser: 10001}
		}, `client "app": refresh tokens per user must be between 1 and 10000, got 10001`},
		{"negative concurrency", func(a *App) { a.PasswordHashConcurrency = -1 }, "password hash concurrency must not be negative"},
		{"client without id", func(a *App) { a.Clients[0].ID = "" }, "client with an empty id"},
		{"duplicate client", func(a *App) { a.Clients[1].ID = "app" }, `client "app" registered twice`},
		{"confidential without secret", func(a *App) { a.Clients[1].SecretSHA256 = nil }, `client "svc": a confidential client needs a secret`},
		{"public with secret", func(a *App) { a.Clients[0].SecretSHA256 = []string{demoSecretSHA256} }, `client "app": a public client has no secret`},
		{"secret not a digest", func(a *App) { a.Clients[1].SecretSHA256 = []string{"demo-secret"} }, "entry 0: not a SHA-256 digest in 64 hex digits or base64"},
		{"secret short hex", func(a *App) { a.Clients[1].SecretSHA256 = []string{demoSecretSHA256[:62]} }, "not a SHA-256 digest"},
		{"unknown grant", func(a *App) { a.Clients[0].GrantTypes = []string{"passwd"} }, `unknown grant type "passwd"`},
		{"public client credentials", func(a *App) { a.Clients[0].GrantTypes = []string{"client_credentials"} }, "public client cannot use client_credentials"},
		{"default scope not allowed", func(a *App) { a.Clients[0].DefaultScopes = []string{"Service/Admin"} }, `default scope "Service/Admin"`},
		{"negative client lifetime", func(a *App) { a.Clients[0].AccessTokenLifetime = caddy.Duration(-time.Minute) }, `client "app": access_token_lifetime must be positive`},
		{"negative client refresh", func(a *App) {
			a.Clients[0].RefreshToken = &RefreshToken{AbsoluteLifetime: caddy.Duration(-time.Minute)}
		}, `client "app": refresh_token.absolute_lifetime must be positive`},

		{"api resource", func(a *App) {
			a.APIResources = []APIResource{{Name: "market-api", SecretSHA256: []string{demoSecretSHA256}}}
		}, ""},
		{"api resource without name", func(a *App) { a.APIResources = []APIResource{{SecretSHA256: []string{demoSecretSHA256}}} }, "API resource with an empty name"},
		{"api resource twice", func(a *App) {
			r := APIResource{Name: "api", SecretSHA256: []string{demoSecretSHA256}}
			a.APIResources = []APIResource{r, r}
		}, `API resource "api" registered twice`},
		{"api resource named as a client", func(a *App) { a.APIResources = []APIResource{{Name: "svc", SecretSHA256: []string{demoSecretSHA256}}} }, "has the name of a client"},
		{"api resource without secret", func(a *App) { a.APIResources = []APIResource{{Name: "api"}} }, `API resource "api" needs a secret`},
		{"api resource bad secret", func(a *App) { a.APIResources = []APIResource{{Name: "api", SecretSHA256: []string{"secret"}}} }, "not a SHA-256 digest"},

		{"lockout", func(a *App) {
			a.Lockout = &Lockout{MaxFailures: 3, Duration: caddy.Duration(time.Hour), BaseDelay: caddy.Duration(time.Second), MaxDelay: caddy.Duration(time.Second)}
		}, ""},
		{"lockout off", func(a *App) { a.Lockout = &Lockout{MaxFailures: -1} }, ""},
		{"lockout negative window", func(a *App) { a.Lockout = &Lockout{Window: caddy.Duration(-time.Minute)} }, "lockout.window must be positive"},
		{"lockout negative throttle", func(a *App) { a.Lockout = &Lockout{ThrottleAfter: -1} }, "throttle_after must not be negative"},
		{"lockout base past max", func(a *App) {
			a.Lockout = &Lockout{BaseDelay: caddy.Duration(5 * time.Second), MaxDelay: caddy.Duration(time.Second)}
		}, "base delay 5s is longer than the max delay 1s"},

		{"signing keys", func(a *App) {
			a.SigningKeys = &SigningKeys{Period: caddy.Duration(48 * time.Hour), Announce: caddy.Duration(time.Hour), Bits: 4096, EncryptionKeyEnv: "KEK"}
		}, ""},
		{"signing keys without rotation", func(a *App) { a.SigningKeys = &SigningKeys{Period: -1, Announce: caddy.Duration(72 * time.Hour)} }, ""},
		{"signing keys period under default announce", func(a *App) { a.SigningKeys = &SigningKeys{Period: caddy.Duration(12 * time.Hour)} }, "announce time 24h0m0s must be shorter than the key period 12h0m0s"},
		{"signing keys announce past default period", func(a *App) { a.SigningKeys = &SigningKeys{Announce: caddy.Duration(800 * time.Hour)} }, "must be shorter than the key period"},
		{"signing keys negative announce", func(a *App) { a.SigningKeys = &SigningKeys{Announce: caddy.Duration(-time.Hour)} }, "signing_keys.announce must be positive"},
		{"signing keys negative check", func(a *App) { a.SigningKeys = &SigningKeys{CheckInterval: caddy.Duration(-time.Hour)} }, "signing_keys.check_interval must be positive"},
		{"signing keys weak", func(a *App) { a.SigningKeys = &SigningKeys{Bits: 1024} }, "2048 to 8192 bits"},
		{"signing keys env and file", func(a *App) { a.SigningKeys = &SigningKeys{EncryptionKeyEnv: "KEK", EncryptionKeyFile: "kek"} }, "exclude each other"},

		{"verifier in-process", func(a *App) {
			a.VerifierConfig = &VerifierConfig{Audience: "api", Algorithms: []string{"RS256", "ES256"}, Types: []string{"at+jwt"}, Leeway: caddy.Duration(time.Minute), CacheSize: -1}
		}, ""},
		{"verifier remote with issuer", func(a *App) { a.VerifierConfig = &VerifierConfig{JWKSURL: "https://login.example.com/jwks"} }, ""},
		{"verifier HMAC", func(a *App) { a.VerifierConfig = &VerifierConfig{Algorithms: []string{"HS256"}} }, `algorithm "HS256" is not allowed`},
		{"verifier none", func(a *App) { a.VerifierConfig = &VerifierConfig{Algorithms: []string{"none"}} }, `algorithm "none" is not allowed`},
		{"verifier empty type", func(a *App) { a.VerifierConfig = &VerifierConfig{Types: []string{""}} }, "verifier: empty token type"},
		{"verifier long leeway", func(a *App) { a.VerifierConfig = &VerifierConfig{Leeway: caddy.Duration(time.Hour)} }, "leeway 1h0m0s out of range"},
		{"verifier negative leeway", func(a *App) { a.VerifierConfig = &VerifierConfig{Leeway: caddy.Duration(-time.Second)} }, "out of range"},
		{"verifier relative jwks_url", func(a *App) { a.VerifierConfig = &VerifierConfig{JWKSURL: "/jwks"} }, "must be an absolute http(s) URL"},
		{"verifier jwks_url other scheme", func(a *App) { a.VerifierConfig = &VerifierConfig{JWKSURL: "file:///etc/jwks.json"} }, "must be an absolute http(s) URL"},

		{"remote only", func(a *App) {
			*a = App{VerifierConfig: &VerifierConfig{Issuer: "https://login.example.com/", JWKSURL: "https://login.example.com/jwks"}}
		}, ""},
		{"remote only with revocations", func(a *App) {
			on := true
			*a = App{VerifierConfig: &VerifierConfig{Issuer: "https://login.example.com", JWKSURL: "https://login.example.com/jwks", CheckRevocations: &on}}
		}, ""},
		{"remote only without issuer", func(a *App) { *a = App{VerifierConfig: &VerifierConfig{JWKSURL: "https://login.example.com/jwks"}} }, "verifier: issuer is required"},
		{"remote only with clients", func(a *App) {
			a.Issuer = ""
			a.VerifierConfig = &VerifierConfig{Issuer: "https://login.example.com", JWKSURL: "https://login.example.com/jwks"}
			a.Lockout = &Lockout{MaxFailures: -1}
		}, "clients, lockout set without an issuer"},
		{"no issuer and verifier without jwks_url", func(a *App) { *a = App{VerifierConfig: &VerifierConfig{Issuer: "https://login.example.com"}} }, "issuer is required"},
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

func TestAuthHandlerValidate(t *testing.T) {
	tests := []struct {
		name string
		h    AuthHandler
		want string // "" when valid
	}{
		{"empty", AuthHandler{}, ""},
		{"full", AuthHandler{Scopes: []string{"Service/Market", "Service/News"}, AnyScope: true, Realm: "market data",
			Headers: map[string][]string{"X-Auth-User": {"{http.auth.user.id}"}}, StripHeaders: []string{"X-Auth-Role"}, StripAuthorization: true}, ""},
		{"empty scope", AuthHandler{Scopes: []string{""}}, `bad scope ""`},
		{"scope with space", AuthHandler{Scopes: []string{"a b"}}, `bad scope "a b"`},
		{"any_scope alone", AuthHandler{AnyScope: true}, "any_scope without scopes"},
		{"realm with quote", AuthHandler{Realm: `a"b`}, "realm"},
		{"realm with newline", AuthHandler{Realm: "a\nb"}, "realm"},
		{"bad header name", AuthHandler{Headers: map[string][]string{"X Auth": {"x"}}}, `bad header name "X Auth"`},
		{"header without value", AuthHandler{Headers: map[string][]string{"X-Auth": nil}}, "has no value"},
		{"authorization header", AuthHandler{Headers: map[string][]string{"authorization": {"x"}}}, "Authorization header cannot be set"},
		{"bad strip header", AuthHandler{StripHeaders: []string{"X:Auth"}}, `bad header name "X:Auth"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.h.Validate()
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
