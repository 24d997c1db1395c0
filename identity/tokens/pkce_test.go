package tokens

import (
	"strings"
	"testing"
)

// The example of RFC 7636 Appendix B.
const (
	rfcVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

func TestPKCE(t *testing.T) {
	if got := S256Challenge(rfcVerifier); got != rfcChallenge {
		t.Fatalf("S256Challenge = %q, want %q", got, rfcChallenge)
	}
	for _, tc := range []struct {
		name, challenge, method, verifier string
		want                              bool
	}{
		{"S256", rfcChallenge, PKCES256, rfcVerifier, true},
		{"S256 wrong verifier", rfcChallenge, PKCES256, rfcVerifier[:42] + "x", false},
		{"S256 challenge sent as verifier", rfcChallenge, PKCES256, rfcChallenge, false},
		{"plain", rfcVerifier, PKCEPlain, rfcVerifier, true},
		{"plain wrong", rfcVerifier, PKCEPlain, rfcVerifier[:42] + "x", false},
		{"short verifier", "abc", PKCEPlain, "abc", false},
		{"long verifier", strings.Repeat("a", 129), PKCEPlain, strings.Repeat("a", 129), false},
		{"bad characters", strings.Repeat("a", 42) + "+", PKCEPlain, strings.Repeat("a", 42) + "+", false},
		{"unknown method", rfcVerifier, "S512", rfcVerifier, false},
		{"empty", rfcChallenge, PKCES256, "", false},
	} {
		if got := verifyPKCE(tc.challenge, tc.method, tc.verifier); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		challenge, method string
		want              bool
	}{
		{rfcChallenge, PKCES256, true},
		{rfcChallenge + "=", PKCES256, false},
		{rfcChallenge[:42], PKCES256, false},
		{strings.Repeat("a", 43), PKCEPlain, true},
		{strings.Repeat("a", 42), PKCEPlain, false},
		{rfcChallenge, "none", false},
	} {
		if got := ValidChallenge(tc.challenge, tc.method); got != tc.want {
			t.Errorf("ValidChallenge(%q, %q) = %t", tc.challenge, tc.method, got)
		}
	}
}
