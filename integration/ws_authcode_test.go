package integration

import (
	"encoding/json"
	"testing"

	"golang.org/x/oauth2"
)

// TestWSAuthCode: an AuthCode message exchanges a code from the
// authorization endpoint through the token endpoint's rules: demo-app's
// code with its redirect URI and PKCE verifier authenticates the socket;
// the same code again, a wrong verifier, or another redirect URI are
// answered Reject.
func TestWSAuthCode(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	const redirect = "http://127.0.0.1:40000/callback"
	newCode := func(t *testing.T) (code, verifier string) {
		t.Helper()
		verifier = oauth2.GenerateVerifier()
		b := newBrowser(t, g)
		code = b.login(b.get(codeURL(g, verifier)), "demo", "demo").params(t, false).Get("code")
		if code == "" {
			t.Fatal("no code")
		}
		return code, verifier
	}
	authCode := func(t *testing.T, code, redirectURI, verifier string) map[string]any {
		t.Helper()
		c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		data, _ := json.Marshal(map[string]string{"ClientID": publicClient, "Code": code, "RedirectURI": redirectURI,
			"CodeVerifier": verifier})
		z := exchange(t, c, `{"Controller":"Auth","Topic":"AuthCode","TransactionID":1,"Data":`+string(data)+`}`, 1)
		var reply map[string]any
		if err := json.Unmarshal(z.Data, &reply); err != nil || z.Topic != "Identify" {
			t.Fatalf("AuthCode reply %+v: %v", z, err)
		}
		if reply["Result"] == "Success" {
			if q := exchange(t, c, `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":2}`, 2); q.Action == "Error" {
				t.Fatalf("QueryMarkets after AuthCode: %+v %s", q, q.Data)
			}
		}
		return reply
	}

	code, verifier := newCode(t)
	for name, try := range map[string][2]string{
		"wrong verifier":    {redirect, oauth2.GenerateVerifier()},
		"another redirect":  {"http://127.0.0.1:40001/callback", verifier},
		"verifier left out": {redirect, ""},
	} {
		if r := authCode(t, code, try[0], try[1]); r["Result"] != "Reject" {
			t.Errorf("%s: %v", name, r)
		}
	}
	if r := authCode(t, code, redirect, verifier); r["Result"] != "Success" || r["UserID"] != subjectOf(t, "demo") {
		t.Fatalf("AuthCode: %v", r)
	}
	if r := authCode(t, code, redirect, verifier); r["Result"] != "Reject" {
		t.Fatalf("the same code again: %v", r)
	}
}
