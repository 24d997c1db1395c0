package integration

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// TestWSBeforeAuthentication checks the limits on an unauthenticated
// socket through the real binary: the demo's 10 messages (each answered
// Error Authority, the 11th closes with 1008), and, on a variant with
// auth_timeout 1s, the deadline (1008) while a socket authenticated by its
// header and one authenticated by an AuthToken message stay up.
func TestWSBeforeAuthentication(t *testing.T) {
	t.Parallel()

	t.Run("message count", func(t *testing.T) {
		t.Parallel()
		g := StartGatehouse(t)
		c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		for i := 1; i <= 10; i++ {
			msg := `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":` + strconv.Itoa(i) + `}`
			if z := exchange(t, c, msg, i); z.Action != "Error" || string(z.Data) != `"Authority"` {
				t.Fatalf("unauthenticated message %d: %+v %s", i, z, z.Data)
			}
		}
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"Controller":"Market","Topic":"QueryMarkets","TransactionID":11}`)); err != nil {
			t.Fatalf("send the 11th: %v", err)
		}
		if code := readClose(t, c); code != websocket.ClosePolicyViolation {
			t.Fatalf("the 11th message before authentication: close %d, want 1008", code)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		g := StartGatehouseWith(t, Options{Config: wsConfig(t, "ws-auth-timeout", "auth_timeout 1s")})
		demo := g.PasswordGrant(t, "demo", "demo")
		byHeader, _ := authedWS(t, g, nil, demo.AccessToken)
		byMessage, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		z := exchange(t, byMessage, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":1,"Data":{"Provider":"Bearer","AccessToken":"`+demo.AccessToken+`"}}`, 1)
		if !strings.Contains(string(z.Data), `"Result":"Success"`) {
			t.Fatalf("AuthToken: %+v %s", z, z.Data)
		}
		silent, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		if code := readClose(t, silent); code != websocket.ClosePolicyViolation {
			t.Fatalf("no authentication within auth_timeout: close %d, want 1008", code)
		}
		// The deadline has passed for the other two as well.
		serverInfoAnswered(t, byHeader, 2)
		serverInfoAnswered(t, byMessage, 3)
	})
}

// TestWSAuthOwner sends AuthOwner messages through the real identity
// server's password check: demo-app (public) with demo/demo authenticates
// the socket as demo; a wrong password and a client without the password
// grant are answered Reject and leave the socket unauthenticated.
func TestWSAuthOwner(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	const wrong = "not-the-demo-password"
	g.AddSecret(wrong)

	authOwner := func(t *testing.T, data string) (*websocket.Conn, map[string]any) {
		t.Helper()
		c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		z := exchange(t, c, `{"Controller":"Auth","Topic":"AuthOwner","TransactionID":1,"Data":`+data+`}`, 1)
		var reply map[string]any
		if err := json.Unmarshal(z.Data, &reply); err != nil {
			t.Fatalf("AuthOwner reply %+v: Data %s: %v", z, z.Data, err)
		}
		if tok, ok := reply["AccessToken"].(string); ok && tok != "" {
			g.AddSecret(tok)
		}
		if z.Controller != "Auth" || z.Topic != "Identify" {
			t.Errorf("AuthOwner reply: %+v, want Auth/Identify", z)
		}
		return c, reply
	}
	unauthenticated := func(t *testing.T, c *websocket.Conn) {
		t.Helper()
		if z := exchange(t, c, `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":2}`, 2); z.Action != "Error" || string(z.Data) != `"Authority"` {
			t.Fatalf("QueryMarkets after a refused AuthOwner: %+v %s", z, z.Data)
		}
	}

	t.Run("demo-app demo/demo", func(t *testing.T) {
		c, reply := authOwner(t, `{"ClientID":"demo-app","Username":"demo","Password":"demo"}`)
		if reply["Result"] != "Success" || reply["UserID"] != subjectOf(t, "demo") {
			t.Fatalf("AuthOwner demo/demo: %v", reply)
		}
		if z := exchange(t, c, `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":2}`, 2); z.Action == "Error" {
			t.Fatalf("QueryMarkets after AuthOwner: %+v %s", z, z.Data)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		c, reply := authOwner(t, `{"ClientID":"demo-app","Username":"demo","Password":"`+wrong+`"}`)
		if reply["Result"] != "Reject" || reply["UserID"] != nil {
			t.Fatalf("AuthOwner with a wrong password: %v", reply)
		}
		unauthenticated(t, c)
	})
	t.Run("client without the password grant", func(t *testing.T) {
		c, reply := authOwner(t, `{"ClientID":"demo-service","ClientSecret":"demo-secret","Username":"demo","Password":"demo"}`)
		if reply["Result"] != "Reject" {
			t.Fatalf("AuthOwner through demo-service: %v", reply)
		}
		unauthenticated(t, c)
	})
}
