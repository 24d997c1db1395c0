package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// parseOption runs the gatehouse global option's parser on body, the
// option's block.
func parseOption(t *testing.T, body string) (*App, error) {
	t.Helper()
	d := caddyfile.NewTestDispenser("gatehouse {\n" + body + "\n}")
	v, err := parseGlobalOption(d, nil)
	if err != nil {
		return nil, err
	}
	app := new(App)
	if err := json.Unmarshal(v.(httpcaddyfile.App).Value, app); err != nil {
		t.Fatalf("decoding the adapted app: %v", err)
	}
	return app, nil
}

func TestParseGlobalOptionErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"unknown option", "issuers http://x", `unrecognized subdirective "issuers"`},
		{"issuer without value", "issuer", "wrong argument count"},
		{"issuer with two values", "issuer http://a http://b", "wrong argument count"},
		{"issuer twice", "issuer http://a\nissuer http://b", "issuer given twice"},
		{"bad duration", "access_token_lifetime soon", `bad duration "soon"`},
		{"duration missing", "id_token_lifetime", "wrong argument count"},
		{"unknown refresh option", "refresh_token {\n\tgrase 5s\n}", `unrecognized subdirective "grase"`},
		{"refresh option twice", "refresh_token {\n\tgrace 5s\n\tgrace 6s\n}", "grace given twice"},
		{"refresh_token argument", "refresh_token 5s", "wrong argument count"},
		{"flag with argument", "uniform_error_status yes", "wrong argument count"},
		{"concurrency not a number", "password_hash_concurrency many", `"many" is not a positive integer`},
		{"concurrency zero", "password_hash_concurrency 0", `"0" is not a positive integer`},
		{"unknown store", "store redis", "gatehouse.stores.redis"},
		{"store without backend", "store", "wrong argument count"},
		{"client without id", "client {\n\tpublic\n}", "wrong argument count"},
		{"client unknown option", "client a {\n\tsecret s\n}", `unrecognized subdirective "secret"`},
		{"client option twice", "client a {\n\tname A\n\tname B\n}", `client "a": name given twice`},
		{"client empty list", "client a {\n\tscopes\n}", "wrong argument count"},
		{"client public with argument", "client a {\n\tpublic true\n}", "wrong argument count"},
		{"client bad lifetime", "client a {\n\taccess_token_lifetime 1x\n}", `bad duration "1x"`},
		{"client require_consent argument", "client a {\n\trequire_consent yes\n}", "wrong argument count"},
		{"client jwks not JSON", "client a {\n\tjwks keys\n}", "not a JWK Set"},
		{"client jwks without keys", "client a {\n\tjwks `{}`\n}", "not a JWK Set"},
		{"client jwks twice", "client a {\n\tjwks `{\"keys\":[]}`\n\tjwks `{\"keys\":[]}`\n}", "jwks given twice"},
		{"bad code_lifetime", "code_lifetime soon", `bad duration "soon"`},
		{"session_lifetime without value", "session_lifetime", "wrong argument count"},
		{"option argument", "gatehouse_arg", `unrecognized subdirective "gatehouse_arg"`},
		{"api_resource without name", "api_resource {\n\tsecret_sha256 x\n}", "wrong argument count"},
		{"api_resource two names", "api_resource a b", "wrong argument count"},
		{"api_resource unknown option", "api_resource a {\n\tsecret x\n}", `unrecognized subdirective "secret"`},
		{"api_resource empty secrets", "api_resource a {\n\tsecret_sha256\n}", "wrong argument count"},
		{"lockout other argument", "lockout on", "wrong argument count"},
		{"lockout off with argument", "lockout off now", "wrong argument count"},
		{"lockout off with block", "lockout off {\n\tmax_failures 3\n}", "lockout off takes no block"},
		{"lockout unknown option", "lockout {\n\tattempts 3\n}", `unrecognized subdirective "attempts"`},
		{"lockout option twice", "lockout {\n\twindow 1m\n\twindow 2m\n}", "lockout: window given twice"},
		{"lockout max_failures zero", "lockout {\n\tmax_failures 0\n}", `"0" is not a positive integer`},
		{"lockout bad duration", "lockout {\n\tduration forever\n}", `bad duration "forever"`},
		{"signing_keys argument", "signing_keys off", "wrong argument count"},
		{"signing_keys unknown option", "signing_keys {\n\tencryption_key abc\n}", `unrecognized subdirective "encryption_key"`},
		{"signing_keys option twice", "signing_keys {\n\tbits 2048\n\tbits 4096\n}", "signing_keys: bits given twice"},
		{"signing_keys bad period", "signing_keys {\n\tperiod never\n}", `bad duration "never"`},
		{"signing_keys period off argument", "signing_keys {\n\tperiod off 1h\n}", "wrong argument count"},
		{"signing_keys bits not a number", "signing_keys {\n\tbits many\n}", `"many" is not a positive integer`},
		{"signing_keys env without name", "signing_keys {\n\tencryption_key_env\n}", "encryption_key_env: one argument needed"},
		{"signing_keys env of two words", "signing_keys {\n\tencryption_key_env KEK abcdef0123\n}", "encryption_key_env is one argument"},
		{"verifier argument", "verifier remote", "wrong argument count"},
		{"verifier unknown option", "verifier {\n\tjwks https://x\n}", `unrecognized subdirective "jwks"`},
		{"verifier option twice", "verifier {\n\tissuer a\n\tissuer b\n}", "verifier: issuer given twice"},
		{"verifier bad leeway", "verifier {\n\tleeway some\n}", `bad duration "some"`},
		{"verifier bad cache size", "verifier {\n\tcache_size big\n}", `"big" is not a positive integer`},
		{"verifier bad check_revocations", "verifier {\n\tcheck_revocations yes\n}", `"yes" is neither on nor off`},
		{"verifier empty algorithms", "verifier {\n\talgorithms\n}", "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOption(t, tt.body)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestParseAPIResourceSecretsAddUp: secret_sha256 takes a list, so it may
// be repeated in an api_resource block, as in a client block.
func TestParseAPIResourceSecretsAddUp(t *testing.T) {
	app, err := parseOption(t, "api_resource api {\n\tsecret_sha256 a b\n\tsecret_sha256 c\n}")
	if err != nil {
		t.Fatal(err)
	}
	if len(app.APIResources) != 1 || strings.Join(app.APIResources[0].SecretSHA256, " ") != "a b c" {
		t.Errorf("api resources %+v, want one with secrets a b c", app.APIResources)
	}
}

func TestParseGlobalOptionTwice(t *testing.T) {
	d := caddyfile.NewTestDispenser("gatehouse {\n}")
	if _, err := parseGlobalOption(d, httpcaddyfile.App{Name: "gatehouse"}); err == nil {
		t.Error("a second gatehouse option was accepted")
	}
	d = caddyfile.NewTestDispenser("gatehouse arg")
	if _, err := parseGlobalOption(d, nil); err == nil {
		t.Error("an argument to the gatehouse option was accepted")
	}
}

func TestParseGlobalOptionDurations(t *testing.T) {
	app, err := parseOption(t, "access_token_lifetime 1h\nid_token_lifetime 90s\nrefresh_token {\n\tabsolute_lifetime 15d\n\tmax_per_user 20\n}")
	if err != nil {
		t.Fatal(err)
	}
	if app.RefreshToken.MaxPerUser != 20 {
		t.Errorf("refresh_token max_per_user %d, want 20", app.RefreshToken.MaxPerUser)
	}
	if _, err := parseOption(t, "refresh_token {\n\tmax_per_user 0\n}"); err == nil {
		t.Error("refresh_token max_per_user 0 was accepted")
	}
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"access_token_lifetime", time.Duration(app.AccessTokenLifetime), time.Hour},
		{"id_token_lifetime", time.Duration(app.IDTokenLifetime), 90 * time.Second},
		{"absolute_lifetime", time.Duration(app.RefreshToken.AbsoluteLifetime), 15 * 24 * time.Hour},
	} {
		if c.got != c.want {
			t.Errorf("%s %v, want %v", c.name, c.got, c.want)
		}
	}
}
