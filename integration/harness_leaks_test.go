package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The log checks: every gatehouse's log, when its test ends, and anything
// else a test reads from it (metrics), must hold no password, client
// secret or token. Tokens are collected as they pass through g.Client.

// AddSecret names strings that must never appear in the log.
func (g *Gatehouse) AddSecret(secrets ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range secrets {
		if s != "" {
			g.secrets = append(g.secrets, s)
		}
	}
}

// AlsoCheckSecretsOf makes CheckLogs look for the secrets of others in g's
// log too.
func (g *Gatehouse) AlsoCheckSecretsOf(others ...*Gatehouse) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peers = append(g.peers, others...)
}

// Secrets returns the strings g's log must never contain: those of g and
// of the peers named by AlsoCheckSecretsOf.
func (g *Gatehouse) Secrets() []string {
	g.mu.Lock()
	secrets := slices.Clone(g.secrets)
	peers := slices.Clone(g.peers)
	g.mu.Unlock()
	for _, p := range peers {
		p.mu.Lock()
		secrets = append(secrets, p.secrets...)
		p.mu.Unlock()
	}
	return secrets
}

// CheckLogs fails t if the log holds a password, a client secret or a token
// that went through g.Client (or was given to AddSecret).
func (g *Gatehouse) CheckLogs(t testing.TB) {
	t.Helper()
	secrets := g.Secrets()
	logs, err := os.ReadFile(g.LogPath)
	if err != nil {
		t.Fatalf("reading the gatehouse log: %v", err)
	}
	if !bytes.Contains(logs, []byte("=== integration: starting gatehouse")) {
		t.Fatalf("the gatehouse log %s was not captured", g.LogPath)
	}
	for _, leak := range findLeaks(logs, secrets, demoPasswords) {
		t.Errorf("the gatehouse log leaks %s", leak)
	}
}

// maxRecordedBody is the most recordingTransport reads of a JSON response.
const maxRecordedBody = 1 << 20

// recordingTransport passes requests on and records the tokens of every
// JSON response, so that CheckLogs can look for them.
type recordingTransport struct {
	base http.RoundTripper
	g    *Gatehouse
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	rt.recordRedirect(resp.Header.Get("Location"))
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/html" {
		return rt.recordFormPost(req, resp)
	}
	if mt != "application/json" {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordedBody))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the response to %s %s: %w", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var fields map[string]any
	if json.Unmarshal(body, &fields) == nil {
		for _, name := range []string{"access_token", "refresh_token", "id_token", "device_code", "user_code"} {
			if s, ok := fields[name].(string); ok {
				rt.g.AddSecret(s)
			}
		}
	}
	return resp, nil
}

// credentialParams are the parameters of an authorization response that
// must never reach a log.
var credentialParams = []string{"code", "access_token", "id_token", "refresh_token"}

// recordRedirect records the code and tokens of an authorization response
// sent as a redirect (in its query or its fragment).
func (rt *recordingTransport) recordRedirect(location string) {
	u, err := url.Parse(location)
	if location == "" || err != nil {
		return
	}
	for _, raw := range []string{u.RawQuery, u.Fragment} {
		v, _ := url.ParseQuery(raw)
		for _, name := range credentialParams {
			rt.g.AddSecret(v.Get(name))
		}
	}
}

// formPostField is a hidden field of a form_post page.
var formPostField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// recordFormPost records the code and tokens of an authorization response
// sent as a form_post page.
func (rt *recordingTransport) recordFormPost(req *http.Request, resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordedBody))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the response to %s %s: %w", req.Method, req.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	for _, m := range formPostField.FindAllSubmatch(body, -1) {
		if slices.Contains(credentialParams, string(m[1])) {
			rt.g.AddSecret(html.UnescapeString(string(m[2])))
		}
	}
	return resp, nil
}

// demoPasswords are the DEMO-ONLY passwords of examples/users.json. They
// equal the user names, so the log may hold them as names; findLeaks looks
// for them where a password would sit.
var demoPasswords = []string{"demo", "trader"}

// findLeaks reports where logs hold one of secrets (anywhere, and for a JWT
// its signature alone too) or one of passwords (as a form value, or as the
// value of a JSON log field whose name is not a user name field).
func findLeaks(logs []byte, secrets, passwords []string) []string {
	var leaks []string
	for _, s := range secrets {
		needles := []string{s}
		if parts := strings.Split(s, "."); len(parts) == 3 && len(parts[2]) >= 16 {
			needles = append(needles, parts[2]) // a JWT's signature
		}
		for _, n := range needles {
			if bytes.Contains(logs, []byte(n)) {
				leaks = append(leaks, fmt.Sprintf("secret %s", redact(s)))
				break
			}
		}
	}
	for _, p := range passwords {
		form := regexp.MustCompile(`password=` + regexp.QuoteMeta(p) + `(?:[^A-Za-z0-9._~%-]|$)`)
		if form.Match(logs) {
			leaks = append(leaks, fmt.Sprintf("password %q as a form value", p))
		}
	}
	for line := range bytes.Lines(logs) {
		var entry map[string]any
		if json.Unmarshal(line, &entry) != nil {
			continue
		}
		walkStrings("", entry, func(key, value string) {
			k := strings.ToLower(key)
			if k == "username" || k == "usernames" || k == "user" || k == "preferred_username" || k == "name" || k == "login" {
				return
			}
			for _, p := range passwords {
				if value == p || value == p+":"+p {
					leaks = append(leaks, fmt.Sprintf("password %q in field %q", p, key))
				}
			}
		})
	}
	return leaks
}

// walkStrings calls f with every string in v and the name of the member
// holding it.
func walkStrings(key string, v any, f func(key, value string)) {
	switch v := v.(type) {
	case string:
		f(key, v)
	case map[string]any:
		for k, e := range v {
			walkStrings(k, e, f)
		}
	case []any:
		for _, e := range v {
			walkStrings(key, e, f)
		}
	}
}

func redact(s string) string {
	if len(s) <= 12 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:6] + "..." + s[len(s)-4:])
}

// TestFindLeaks checks the checker itself.
func TestFindLeaks(t *testing.T) {
	t.Parallel()
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLW9mLWF0LWxlYXN0LXNpeHRlZW4"
	secrets := []string{"demo-secret", jwt, "refresh-token-value"}
	for _, tc := range []struct {
		name  string
		logs  string
		leaks int
	}{
		{"clean", `{"msg":"token issued","client_id":"demo-app","username":"demo","user":"trader"}` + "\n", 0},
		{"client secret", `{"msg":"x","secret":"demo-secret"}`, 1},
		{"whole JWT", "text " + jwt, 1},
		{"JWT signature alone", `{"sig":"c2lnbmF0dXJlLW9mLWF0LWxlYXN0LXNpeHRlZW4"}`, 1},
		{"refresh token", `{"body":"grant_type=refresh_token&refresh_token=refresh-token-value"}`, 1},
		{"password as form value", `{"body":"username=demo&password=demo&client_id=demo-app"}`, 1},
		{"password in a field", `{"msg":"login failed","password":"trader"}`, 1},
		{"password in a nested field", `{"req":{"form":{"pw":["demo"]}}}`, 1},
		{"name that equals a password", `{"username":"demo","name":"trader"}`, 0},
		{"a list of user names", `{"msg":"users file seeded TOTP factors","usernames":["trader","demo"]}`, 0},
		{"password as a prefix of a value", `{"body":"password=demonstration"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := findLeaks([]byte(tc.logs), secrets, demoPasswords)
			if len(got) != tc.leaks {
				t.Errorf("findLeaks = %q, want %d leak(s)", got, tc.leaks)
			}
		})
	}
}
