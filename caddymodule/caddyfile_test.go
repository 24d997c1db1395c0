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
		{"sqlite two paths", "store sqlite a.db b.db", "wrong argument count"},
		{"sqlite path twice", "store sqlite a.db {\n\tpath b.db\n}", "path given twice"},
		{"sqlite unknown option", "store sqlite {\n\tfile a.db\n}", `unrecognized subdirective "file"`},
		{"client without id", "client {\n\tpublic\n}", "wrong argument count"},
		{"client unknown option", "client a {\n\tsecret s\n}", `unrecognized subdirective "secret"`},
		{"client option twice", "client a {\n\tname A\n\tname B\n}", `client "a": name given twice`},
		{"client empty list", "client a {\n\tscopes\n}", "wrong argument count"},
		{"client public with argument", "client a {\n\tpublic true\n}", "wrong argument count"},
		{"client bad lifetime", "client a {\n\taccess_token_lifetime 1x\n}", `bad duration "1x"`},
		{"option argument", "gatehouse_arg", `unrecognized subdirective "gatehouse_arg"`},
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
	app, err := parseOption(t, "access_token_lifetime 1h\nid_token_lifetime 90s\nrefresh_token {\n\tabsolute_lifetime 15d\n}")
	if err != nil {
		t.Fatal(err)
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

func TestParseIdentityHandlerErrors(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"argument", "gatehouse_identity foo", "wrong argument count"},
		{"option", "gatehouse_identity {\n\tissuer x\n}", `unrecognized subdirective "issuer"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := new(IdentityHandler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if err := new(IdentityHandler).UnmarshalCaddyfile(caddyfile.NewTestDispenser("gatehouse_identity")); err != nil {
		t.Errorf("plain directive: %v", err)
	}
}
