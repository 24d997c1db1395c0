package clients

import (
	"strings"
	"testing"
)

func TestMatchRedirectURI(t *testing.T) {
	c := &Client{Config: Config{RedirectURIs: []string{
		"https://app.example/cb",
		"https://app.example/cb2?tenant=a",
		"http://127.0.0.1/callback",
		"http://[::1]:8000/native",
		"http://localhost:8080/callback",
		"com.example.app:/oauth",
	}}}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example/cb", true},
		{"https://app.example/cb2?tenant=a", true},
		{"com.example.app:/oauth", true},
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:51234/callback", true},
		{"http://127.0.0.1:1/callback", true},
		{"http://[::1]/native", true},
		{"http://[::1]:40000/native", true},
		{"http://localhost:8080/callback", true},

		{"https://app.example/cb/", false},                // suffix
		{"https://app.example/c", false},                  // prefix
		{"https://app.example/cb?x=1", false},             // query added
		{"https://app.example/cb2", false},                // query dropped
		{"https://app.example/cb#frag", false},            // fragment
		{"https://APP.example/cb", false},                 // case
		{"HTTPS://app.example/cb", false},                 // scheme case
		{"https://app.example/CB", false},                 // path case
		{"https://user@app.example/cb", false},            // user info
		{"https://app.example@evil.example/cb", false},    // user info the other way
		{"https://app.example:443/cb", false},             // explicit port
		{"https://app.example/%63b", false},               // encoding
		{"http://app.example/cb", false},                  // scheme
		{"http://localhost:9999/callback", false},         // localhost keeps its port
		{"http://localhost/callback", false},              // localhost keeps its port
		{"http://127.0.0.1:5000/callback/x", false},       // loopback suffix
		{"http://127.0.0.1:5000/callbac", false},          // loopback prefix
		{"http://127.0.0.1:5000/callback#x", false},       // loopback fragment
		{"http://127.0.0.1:5000/callback?x=1", false},     // loopback query
		{"http://user@127.0.0.1:5000/callback", false},    // loopback user info
		{"http://127.0.0.1.evil.example/callback", false}, // not loopback
		{"http://127.0.0.1:5000@evil.example/callback", false},
		{"http://127.0.0.1:0/callback", false},     // port 0
		{"http://127.0.0.1:65536/callback", false}, // port out of range
		{"http://127.0.0.1:08080/callback", false}, // leading zero
		{"http://127.0.0.1:/callback", false},      // empty port
		{"http://127.0.0.1:5000\\@evil.example/callback", false},
		{"https://127.0.0.1:5000/callback", false}, // loopback https not registered
		{"http://[::1]:5000/callback", false},      // the other loopback
		{"", false},
	} {
		if got := c.MatchRedirectURI(tc.uri); got != tc.want {
			t.Errorf("MatchRedirectURI(%q) = %t, want %t", tc.uri, got, tc.want)
		}
	}
}

func TestRedirectURIConfig(t *testing.T) {
	for _, uri := range []string{"https://app.example/cb#x", "javascript:alert(1)//", "data:text/html,x", "/relative",
		"https://user@app.example/cb", "https:///nohost"} {
		err := ValidateAll([]Config{{ID: "a", Public: true, RedirectURIs: []string{uri}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "redirect URI") {
			t.Errorf("%q: %v", uri, err)
		}
	}
	err := ValidateAll([]Config{{ID: "a", Public: true, RequestObjectJWKS: []byte(`{"keys":[]}`)}}, nil)
	if err == nil {
		t.Error("an empty request-object key set was accepted")
	}
	// A set of no key the parser keeps (a symmetric key, an Ed25519 key
	// without a kid): the error names every type it keeps, Ed25519 too.
	noKey := `{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"},{"kty":"OKP","crv":"Ed25519","x":"` + strings.Repeat("A", 43) + `"}]}`
	err = ValidateAll([]Config{{ID: "a", Public: true, RequestObjectJWKS: []byte(noKey)}}, nil)
	if err == nil || !strings.Contains(err.Error(), "no RSA, EC (P-256, P-384, P-521) or Ed25519 signature key with a kid") {
		t.Errorf("a request-object key set of no usable key: %v", err)
	}
}
