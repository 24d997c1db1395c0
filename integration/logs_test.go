package integration

import (
	"net/url"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TestLogsHoldNoSecrets runs every flow, failed ones included, then stops
// the server and reads all it logged: no password, client secret or token.
// (Every test's cleanup runs the same check on its own server.)
func TestLogsHoldNoSecrets(t *testing.T) {
	g := StartGatehouse(t)
	ctx := clientContext(t, g)

	for _, user := range []string{"demo", "trader"} {
		tok := g.PasswordGrant(t, user, user)
		g.Refresh(t, tok.RefreshToken)
		g.RefreshGrant(t, tok.RefreshToken) // a replay inside the grace window
	}
	resp, body := g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"demo"}, "password": {"trader"}, "client_id": {publicClient}}, "", "")
	if e := decodeError(t, resp, body); e.Error != "invalid_grant" {
		t.Errorf("wrong password: %q, want invalid_grant", e.Error)
	}
	resp, body = g.PostToken(t, url.Values{"grant_type": {"client_credentials"}}, serviceClient, "wrong-"+serviceSecret)
	decodeError(t, resp, body)
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cc := &clientcredentials.Config{ClientID: serviceClient, ClientSecret: serviceSecret, TokenURL: g.TokenEndpoint(t), AuthStyle: style}
		if _, err := cc.Token(ctx); err != nil {
			t.Errorf("client credentials (auth style %d): %v", style, err)
		}
	}

	g.Stop()
	g.CheckLogs(t)
	if t.Failed() {
		t.Logf("gatehouse log:\n%s", g.Logs())
	}
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
