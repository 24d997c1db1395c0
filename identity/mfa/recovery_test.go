package mfa

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestRecoveryCodes: a set has RecoveryCodes distinct codes of the printed
// form, each matched by its own hash only, however it is typed (lower
// case, without dashes, with spaces, O for 0, I or L for 1); a wrong,
// short or long code matches none. It failed when MatchRecovery returned
// the first index compared (every code matched hash 0) and when
// normalize kept the dashes (a code typed without them refused).
func TestRecoveryCodes(t *testing.T) {
	codes, hashes, err := NewRecoveryCodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != RecoveryCodes || len(hashes) != RecoveryCodes {
		t.Fatalf("%d codes, %d hashes", len(codes), len(hashes))
	}
	form := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$`)
	seen := map[string]bool{}
	for i, c := range codes {
		if !form.MatchString(c) || seen[c] {
			t.Fatalf("code %q: bad form or repeated", c)
		}
		seen[c] = true
		if !bytes.Equal(RecoveryHash(c), hashes[i]) {
			t.Fatalf("code %d's hash differs from the one returned", i)
		}
		typings := []string{c, strings.ToLower(c), strings.ReplaceAll(c, "-", ""), strings.ReplaceAll(c, "-", " "),
			strings.NewReplacer("0", "O", "1", "l").Replace(c)}
		for _, typed := range typings {
			if got := MatchRecovery(typed, hashes); got != i {
				t.Fatalf("code %d typed %q matched %d", i, typed, got)
			}
		}
	}
	for _, typed := range []string{"", "0000-0000-0000-0000", codes[0][:18], codes[0] + "-0", codes[0] + "U", strings.Repeat("-", 100)} {
		if got := MatchRecovery(typed, hashes); got != -1 {
			t.Errorf("%q matched %d", typed, got)
		}
	}
}
