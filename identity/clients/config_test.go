package clients

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

func TestClientConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		client  Config
		wantErr string
	}{
		{"public with secret", Config{ID: "a", Public: true, SecretHashes: [][]byte{sha("x")}}, "public client has no secret"},
		{"confidential without secret", Config{ID: "a"}, "needs a secret"},
		{"short hash", Config{ID: "a", SecretHashes: [][]byte{[]byte("x")}}, "SHA-256"},
		{"unknown grant", Config{ID: "a", Public: true, GrantTypes: []string{"magic"}}, "unknown grant"},
		{"public client credentials", Config{ID: "a", Public: true, GrantTypes: []string{oauth.GrantClientCredentials}}, "cannot use client_credentials"},
		{"default scope not allowed", Config{ID: "a", Public: true, Scopes: []string{"x"}, DefaultScopes: []string{"y"}}, "default scope"},
		{"bad origin", Config{ID: "a", Public: true, AllowedOrigins: []string{"http://x/path"}}, "not an origin"},
		{"empty id", Config{Public: true}, "empty id"},
		{"entitlements without client_credentials", Config{ID: "a", Public: true, GrantTypes: []string{oauth.GrantPassword},
			Entitlements: entitle.MustParse("ASX:quotes")}, "entitlements are a client_credentials client's"},
		{"entitlements too large", Config{ID: "a", SecretHashes: [][]byte{sha("x")}, GrantTypes: []string{oauth.GrantClientCredentials},
			Entitlements: manyVenues(200)}, "too large for an access token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateAll([]Config{tt.client}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if err := ValidateAll([]Config{{ID: "a", Public: true}, {ID: "a", Public: true}}, nil); err == nil {
		t.Fatal("duplicate client accepted")
	}
	res := []APIResource{{Name: "a", SecretHashes: [][]byte{sha("x")}}}
	if err := ValidateAll([]Config{{ID: "a", Public: true}}, res); err == nil {
		t.Fatal("API resource named like a client accepted")
	}
	if err := ValidateAll(nil, append(res, res...)); err == nil {
		t.Fatal("API resource registered twice accepted")
	}
}

// manyVenues is quotes of n venues.
func manyVenues(n int) entitle.Set {
	ps := make([]entitle.Pair, n)
	for i := range ps {
		ps[i] = entitle.Pair{Venue: fmt.Sprintf("V%03d", i), Feed: "quotes"}
	}
	return entitle.MustNew(ps...)
}

func sha(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func TestParseDigest(t *testing.T) {
	const demoHex = "cd577fe2561ebff23505db0bb006300c7cdecbd46bc0e03c449afafaca2c25bf"
	want, err := ParseDigest(demoHex)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sosJb8=", // as IdentityServer prints it
		"zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sosJb8",  // unpadded
		strings.ToUpper(demoHex),
	} {
		got, err := ParseDigest(s)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %x, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "abc", demoHex[:62], "zVd/4lYev/I1BdsLsAYwDHzey9RrwOA8RJr6+sos"} {
		if _, err := ParseDigest(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	secret, digest, err := NewSecret()
	if err != nil || len(secret) < 43 || DigestHex(secret) != digest {
		t.Fatalf("NewSecret: %q %q %v", secret, digest, err)
	}
}

func TestLogoutURIs(t *testing.T) {
	base := func() Config {
		return Config{ID: "rp", Public: true, PostLogoutRedirectURIs: []string{"https://rp.example/bye"},
			FrontchannelLogoutURI: "https://rp.example/fc", BackchannelLogoutURI: "https://rp.example/bc"}
	}
	good := base()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"post-logout fragment":   func(c *Config) { c.PostLogoutRedirectURIs = []string{"https://rp.example/#x"} },
		"post-logout relative":   func(c *Config) { c.PostLogoutRedirectURIs = []string{"/bye"} },
		"front-channel fragment": func(c *Config) { c.FrontchannelLogoutURI = "https://rp.example/fc#x" },
		"front-channel scheme":   func(c *Config) { c.FrontchannelLogoutURI = "javascript:alert(1)" },
		"back-channel relative":  func(c *Config) { c.BackchannelLogoutURI = "/bc" },
		"back-channel user info": func(c *Config) { c.BackchannelLogoutURI = "https://u:p@rp.example/bc" },
	} {
		c := base()
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	reg, err := NewRegistry([]Config{good}, nil, Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Client("rp")
	for uri, want := range map[string]bool{
		"https://rp.example/bye": true, "https://rp.example/bye/": false, "https://rp.example/bye?x=1": false,
		"https://RP.example/bye": false, "https://rp.example/by": false, "": false, "https://evil.example/bye": false,
	} {
		if c.MatchPostLogoutRedirectURI(uri) != want {
			t.Errorf("%q: want %t", uri, want)
		}
	}
}
