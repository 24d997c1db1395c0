package identity

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A repeated parameter's name reaches error_description only when it is
// made of letters, digits, "_", "-" and "." (every name OAuth defines), at
// the authorization endpoint and the token endpoint alike: a client that
// shows error_description as HTML cannot be injected from a link an
// attacker chose.
// It failed when: "parameter <script>x</script> is repeated" went back to
// the client.
func TestRepeatedParameterNameNotEchoed(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	hostile := `<script>x</script>`
	q := codeRequest()
	q.Add(hostile, "1")
	q.Add(hostile, "2")
	v := b.authorize(q).result(t, false)
	if d := v.Get("error_description"); v.Get("error") != "invalid_request" || strings.ContainsAny(d, "<>/") || strings.Contains(d, "script") {
		t.Errorf("authorization endpoint: %v", v)
	}
	q = codeRequest()
	q.Add("state", "again")
	if v := b.authorize(q).result(t, false); !strings.Contains(v.Get("error_description"), "parameter state is repeated") {
		t.Errorf("a repeated state is not named: %v", v)
	}

	body := "grant_type=password&username=demo&password=demo-pw&client_id=app&" +
		"%3Cimg%20src%3Dx%3E=1&%3Cimg%20src%3Dx%3E=2"
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res := f.do(req)
	if d := res.str("error_description"); res.str("error") != "invalid_request" || strings.ContainsAny(d, "<>=") || strings.Contains(d, "img") {
		t.Errorf("token endpoint: %d %s", res.status, res.raw)
	}
}
