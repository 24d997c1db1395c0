package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// wsTimeout bounds each wait for a message or a dial.
const wsTimeout = 10 * time.Second

// zenith is a Zenith message as the tests read it.
type zenith struct {
	Controller    string          `json:"Controller"`
	Topic         string          `json:"Topic"`
	Action        string          `json:"Action"`
	TransactionID int             `json:"TransactionID"`
	Data          json.RawMessage `json:"Data"`
}

// dialWS opens a socket to path of g's site with the sub-protocol and,
// when token is set, an Authorization header.
func dialWS(t *testing.T, g *Gatehouse, path, subprotocol, token string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: wsTimeout, Subprotocols: []string{subprotocol}}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := d.Dial(fmt.Sprintf("ws://127.0.0.1:%d%s", g.Port, path), h)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// exchange sends msg and returns the next message with TransactionID txid
// (subscriptions may send others first).
func exchange(t *testing.T, c *websocket.Conn, msg string, txid int) zenith {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
	deadline := time.Now().Add(wsTimeout)
	for {
		c.SetReadDeadline(deadline)
		_, raw, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for the answer to %s: %v", msg, err)
		}
		var z zenith
		if err := json.Unmarshal(raw, &z); err != nil {
			t.Fatalf("not a Zenith message: %s", raw)
		}
		if z.TransactionID == txid {
			return z
		}
	}
}

// TestMessageGatewayThroughTheDemo drives the demo's message service with
// a real WebSocket client: the token on the upgrade or in an AuthToken
// message (raw and Base-64), QueryIdentify, per-scope denials answered by
// the gateway, allowed messages answered by the demo backend, a refused
// token refused before the socket, and the original client's profile.
func TestMessageGatewayThroughTheDemo(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	demo := g.PasswordGrant(t, "demo", "demo")
	trader := g.TradingToken(t) // Trading needs a second factor

	t.Run("header auth", func(t *testing.T) {
		c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", demo.AccessToken)
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		if z := exchange(t, c, `{"Controller":"Zenith","Topic":"ServerInfo","TransactionID":1}`, 1); z.Action == "Error" {
			t.Fatalf("ServerInfo: %+v %s", z, z.Data)
		}
		if z := exchange(t, c, `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":2}`, 2); z.Action == "Error" {
			t.Fatalf("QueryMarkets: %s", z.Data)
		}
		// demo holds Service/Market but not Service/Trading.
		if z := exchange(t, c, `{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":3}`, 3); z.Action != "Error" || string(z.Data) != `"Authority"` {
			t.Fatalf("QueryAccounts without Service/Trading: %+v %s", z, z.Data)
		}
		if z := exchange(t, c, `{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":4}`, 4); !strings.Contains(string(z.Data), subjectOf(t, "demo")) {
			t.Fatalf("QueryIdentify: %+v %s", z, z.Data)
		}
	})

	t.Run("refused token on the upgrade", func(t *testing.T) {
		_, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", tamperSignature(t, demo.AccessToken))
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("dial with a tampered token: %v, %v", err, resp)
		}
	})

	t.Run("message auth", func(t *testing.T) {
		c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		if z := exchange(t, c, `{"Controller":"Market","Topic":"QueryMarkets","TransactionID":1}`, 1); z.Action != "Error" || string(z.Data) != `"Authority"` {
			t.Fatalf("a message before authentication: %+v %s", z, z.Data)
		}
		b64 := base64.StdEncoding.EncodeToString([]byte(trader.AccessToken))
		z := exchange(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":2,"Data":{"Provider":"Bearer","AccessToken":"`+b64+`"}}`, 2)
		if z.Topic != "Identify" || !strings.Contains(string(z.Data), `"Result":"Success"`) || !strings.Contains(string(z.Data), "Service.Trading") {
			t.Fatalf("AuthToken: %+v %s", z, z.Data)
		}
		z = exchange(t, c, `{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":3}`, 3)
		if z.Action == "Error" {
			t.Fatalf("QueryAccounts as trader: %s", z.Data)
		}
	})

	t.Run("the original client's profile", func(t *testing.T) {
		c, resp, err := dialWS(t, g, "/Zenith?version=2.0", "ZenithJson", "")
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		z := exchange(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":7,"Data":{"Provider":"Bearer","AccessToken":"`+demo.AccessToken+`"}}`, 7)
		if z.Topic != "AuthToken" || !strings.Contains(string(z.Data), `"ExpiresIn"`) || !strings.Contains(string(z.Data), `"AccessToken"`) {
			t.Fatalf("AuthToken in the motif profile: %+v %s", z, z.Data)
		}
		z = exchange(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":8,"Data":{"Provider":"Bearer","AccessToken":"garbage"}}`, 8)
		if !strings.Contains(string(z.Data), `"Rejected"`) {
			t.Fatalf("a bad token in the motif profile: %s", z.Data)
		}
	})
}
