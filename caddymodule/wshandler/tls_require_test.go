package wshandler

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// TestGatewayRequireTLS: on the TLS site's /tls-only gateway, which has
// require_tls, a connection over TLS keeps the Trading and OrderPad
// scopes, over HTTP/1.1 (wss) and over HTTP/3 (an extended CONNECT, whose
// request carries the TLS state as well): QueryIdentify lists them, a
// Trading message reaches the backend, and the backend's identity headers
// name them. The plain-HTTP side, where they are withheld, is
// TestLiveRequireTLS in integration/, through the demo.
func TestGatewayRequireTLS(t *testing.T) {
	s := startTLSSite(t)
	token := s.tokenFor(t, "trading-service")
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	check := func(t *testing.T, c *websocket.Conn) {
		t.Helper()
		defer c.Close()
		select {
		case h := <-s.backend:
			if scopes := h.Get("X-Gatehouse-Scopes"); !strings.Contains(scopes, "Service/Trading") || !strings.Contains(scopes, "Service/OrderPad") {
				t.Errorf("the backend's X-Gatehouse-Scopes over TLS: %q, want Trading and OrderPad", scopes)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the backend saw no socket")
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for _, tc := range []struct{ msg, want string }{
			{`{"Controller":"Auth","Topic":"QueryIdentify","TransactionID":1}`, `"Gatehouse.Service.Trading","Gatehouse.Service.OrderPad"`},
			{`{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":2}`, `{"Controller":"Trading","Topic":"QueryAccounts","TransactionID":2}`},
		} {
			if err := c.WriteMessage(websocket.TextMessage, []byte(tc.msg)); err != nil {
				t.Fatal(err)
			}
			if _, p, err := c.ReadMessage(); err != nil || !strings.Contains(string(p), tc.want) {
				t.Fatalf("over TLS with require_tls: %s answered %s (%v), want %s", tc.msg, p, err, tc.want)
			}
		}
	}

	t.Run("wss over HTTP/1.1", func(t *testing.T) {
		d := websocket.Dialer{TLSClientConfig: s.tlsConfig(), Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 10 * time.Second}
		c, resp, err := d.Dial("wss"+strings.TrimPrefix(s.base, "https")+"/tls-only", hdr)
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		check(t, c)
	})

	t.Run("HTTP/3", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		qc, err := quic.DialAddr(ctx, s.addr, s.tlsConfig(http3.NextProtoH3), nil)
		if err != nil {
			t.Fatalf("QUIC dial: %v", err)
		}
		defer qc.CloseWithError(0, "")
		cc := (&http3.Transport{}).NewClientConn(qc)
		c, resp, err := dialExtended(ctx, cc, true, s.base+"/tls-only?version=1.1", hdr)
		if err != nil {
			t.Fatalf("extended CONNECT: %v (%v)", err, resp)
		}
		check(t, c)
	})
}
