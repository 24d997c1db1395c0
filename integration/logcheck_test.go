package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
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
