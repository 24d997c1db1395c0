package verify_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// TestAuthorizeACRValues: a requirement with acr_values passes a token of
// one of those classes, and refuses one of another class or of none with
// 401 insufficient_user_authentication and the classes in the challenge
// (RFC 9470 §3); scopes are checked first. It failed when
// authenticatedBy answered true.
func TestAuthorizeACRValues(t *testing.T) {
	f := newFixture(t)
	const mfa, sfa = "https://refeds.org/profile/mfa", "https://refeds.org/profile/sfa"
	req := verify.Requirement{Scopes: []string{"Service/Trading"}, ACRValues: []string{mfa}}
	token := func(acr any, scope string) string {
		c := f.issuer.Claims("alice", scope)
		if acr != nil {
			c["acr"] = acr
		}
		return verifytest.Sign(f.issuer.Header(), c, f.issuer.Private)
	}
	if id, refusal := f.v.Authorize(bearerRequest(token(mfa, "Service/Trading")), req); refusal != nil || id == nil {
		t.Fatalf("a multi-factor token refused: %+v", refusal)
	}
	for name, tok := range map[string]string{
		"single factor": token(sfa, "Service/Trading"),
		"no acr":        token(nil, "Service/Trading"),
		"acr not text":  token(2, "Service/Trading"),
		"acr prefix":    token("https://refeds.org/profile/mf", "Service/Trading"),
	} {
		_, refusal := f.v.Authorize(bearerRequest(tok), req)
		if refusal == nil {
			t.Fatalf("%s: passed", name)
		}
		w := write(t, refusal)
		want := `Bearer realm="gatehouse", error="insufficient_user_authentication", error_description="` + refusal.Description + `", acr_values="` + mfa + `"`
		if w.status != http.StatusUnauthorized || w.body["error"] != verify.BearerInsufficientUserAuthentication ||
			w.header.Get("WWW-Authenticate") != want {
			t.Errorf("%s: %d %s %q", name, w.status, w.raw, w.header.Get("WWW-Authenticate"))
		}
	}
	// A missing scope is told first: stepping up would not give it.
	_, refusal := f.v.Authorize(bearerRequest(token(sfa, "Service/Market")), req)
	if refusal == nil || refusal.Code != verify.BearerInsufficientScope {
		t.Fatalf("missing scope and class: %+v", refusal)
	}
	if err := (verify.Requirement{ACRValues: []string{"a b"}}).Validate(); err == nil || !strings.Contains(err.Error(), "acr") {
		t.Fatalf("an acr value with a space: %v", err)
	}
}
