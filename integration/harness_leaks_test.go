package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

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
			if k == "username" || k == "user" || k == "preferred_username" || k == "name" || k == "login" {
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
