package integration

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TestLogsHoldNoSecrets runs every flow, failed ones included, with every
// log on (Caddy's debug logs and the site's access log), then stops the
// server and reads all it logged: no password, client secret or token.
// (Every test's cleanup runs the same check on its own server.)
func TestLogsHoldNoSecrets(t *testing.T) {
	g := StartGatehouseWith(t, Options{Config: verboseDemoConfig(t, "verbose", "")})
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

	// The token services, with good and bad credentials and tokens. A
	// wrong secret that holds the real one is caught if it is logged.
	tok := g.PasswordGrant(t, "demo", "demo")
	resp, body = g.Userinfo(t, tok.AccessToken)
	wantStatus(t, "userinfo", resp, body, http.StatusOK)
	resp, body = g.Userinfo(t, tamperSignature(t, tok.AccessToken))
	wantStatus(t, "userinfo with a tampered token", resp, body, http.StatusUnauthorized)
	resp, body = g.Introspect(t, tok.AccessToken, serviceSecret)
	wantStatus(t, "introspection", resp, body, http.StatusOK)
	resp, body = g.Introspect(t, tok.RefreshToken, "wrong-"+serviceSecret)
	wantStatus(t, "introspection with a wrong secret", resp, body, http.StatusUnauthorized)
	resp, body = g.PostForm(t, "introspection_endpoint", url.Values{"token": {tok.AccessToken}, "client_id": {serviceClient}, "client_secret": {serviceSecret}}, "", "")
	wantStatus(t, "introspection with client_secret_post", resp, body, http.StatusOK)
	resp, body = g.PostForm(t, "revocation_endpoint", url.Values{"token": {tok.AccessToken}}, serviceClient, serviceSecret)
	wantStatus(t, "revocation of another client's token", resp, body, http.StatusOK)
	resp, body = g.Revoke(t, tok.AccessToken)
	wantStatus(t, "revocation of the access token", resp, body, http.StatusOK)
	resp, body = g.Userinfo(t, tok.AccessToken)
	wantStatus(t, "userinfo with a revoked token", resp, body, http.StatusUnauthorized)
	resp, body = g.Revoke(t, tok.RefreshToken)
	wantStatus(t, "revocation of the refresh token", resp, body, http.StatusOK)
	resp, body = g.RefreshGrant(t, tok.RefreshToken)
	if e := decodeError(t, resp, body); e.Error != "invalid_grant" {
		t.Errorf("refresh with a revoked token: %q, want invalid_grant", e.Error)
	}

	g.Stop()
	g.CheckLogs(t)
	if t.Failed() {
		t.Logf("gatehouse log:\n%s", g.Logs())
	}
}

// verboseDemoConfig writes Caddyfile.example with every log on (Caddy's
// debug logs and the site's access log), as a deployment might run it, so
// the log checks see all there is to see; appOptions go into the gatehouse
// global option. name names the config's directory.
func verboseDemoConfig(t testing.TB, name, appOptions string) string {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(repoRoot, "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	config := string(orig)
	for _, edit := range []struct{ anchor, insert string }{
		{"\tpersist_config off\n", "\tdebug\n"},
		{"\t\tusers_file examples/users.json\n", appOptions},
		{"\tbind {$GATEHOUSE_BIND:127.0.0.1}\n", "\tlog\n"},
	} {
		if !strings.Contains(config, edit.anchor) {
			t.Fatalf("Caddyfile.example has no %q to add to", edit.anchor)
		}
		config = strings.Replace(config, edit.anchor, edit.anchor+edit.insert, 1)
	}
	return writeConfig(t, name, config)
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
