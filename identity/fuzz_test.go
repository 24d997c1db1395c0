package identity

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzTokenEndpoint: any form body gets an RFC 6749 answer (200 or a 4xx
// JSON error), never a panic or a server error.
func FuzzTokenEndpoint(f *testing.F) {
	for _, body := range []string{
		"grant_type=password&client_id=app&username=demo&password=demo-pw",
		"grant_type=client_credentials&client_id=svc&client_secret=svc-secret",
		"grant_type=refresh_token&client_id=app&refresh_token=x",
		"grant_type=password&grant_type=password", "a=%zz", "scope=%00", "",
	} {
		f.Add(body, "application/x-www-form-urlencoded")
	}
	f.Add("{}", "application/json")
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, body, ctype string) {
		fx.t = t
		req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		res := fx.do(req)
		if res.status >= 500 {
			t.Fatalf("server error %d for %q: %s", res.status, body, res.raw)
		}
		if res.status != 200 && res.str("error") == "" {
			t.Fatalf("status %d without an error body: %s", res.status, res.raw)
		}
	})
}
