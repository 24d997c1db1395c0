package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/gorilla/websocket"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TestLogsHoldNoSecrets runs every flow, failed ones included, with every
// log on (Caddy's debug logs and the site's access log), then stops the
// server and reads all it logged: no password, client secret or token.
// (Every test's cleanup runs the same check on its own server.)
func TestLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	g := StartGatehouseWith(t, Options{Config: verboseConfig(t, "verbose", "")})
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

	// Credentials a client put in the URL are refused, and the demo's
	// access-log filter keeps them out of the log.
	fresh := g.PasswordGrant(t, "demo", "demo")
	for name, target := range map[string]string{
		"userinfo with access_token": g.endpoint(t, "userinfo_endpoint") + "?access_token=" + url.QueryEscape(fresh.AccessToken),
		"token with a code":          g.TokenEndpoint(t) + "?code=" + url.QueryEscape(fresh.RefreshToken),
		"introspect with token":      g.endpoint(t, "introspection_endpoint") + "?token=" + url.QueryEscape(fresh.AccessToken),
	} {
		resp, body := g.Do(t, mustRequest(t, http.MethodGet, target, nil))
		if resp.StatusCode < 400 {
			t.Errorf("%s: status %d, want a refusal: %s", name, resp.StatusCode, body)
		}
	}
	// The end-session endpoint takes its id_token_hint in the URL, as
	// RP-Initiated Logout has it: accepted, and kept out of the log.
	resp, body = g.Do(t, mustRequest(t, http.MethodGet,
		g.endpoint(t, "end_session_endpoint")+"?id_token_hint="+url.QueryEscape(fresh.IDToken), nil))
	wantStatus(t, "end-session with a hint", resp, body, http.StatusOK)

	// Some clients put the access token in the sub-protocol header
	// (browsers cannot set Authorization on an upgrade): the demo's
	// access-log filter keeps the header out of the log.
	d := websocket.Dialer{HandshakeTimeout: wsTimeout, Subprotocols: []string{"ServiceJson", "access_token", fresh.AccessToken}}
	if c, _, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d/ws?version=1.1", g.Port), nil); err == nil {
		c.Close()
	}

	g.Stop()
	g.CheckLogs(t)
	if t.Failed() {
		t.Logf("gatehouse log:\n%s", g.Logs())
	}
}
