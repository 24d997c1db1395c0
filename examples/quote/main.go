// Command quote is the demo's smallest market-data client: it signs in with
// the password grant (golang.org/x/oauth2), opens the message service with
// the access token on the upgrade, subscribes to one security and prints
// its first ticks, then unsubscribes and closes.
//
//	go run ./examples/quote [-issuer http://localhost:8080] [-user demo] [-password demo] [-code BHP] [-n 5]
//
// The issuer's default follows GATEHOUSE_HTTP_PORT, as the demo's does. It
// prints prices, never the token.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/oauth2"
)

func main() {
	port := cmp.Or(os.Getenv("GATEHOUSE_HTTP_PORT"), "8080")
	issuer := flag.String("issuer", "http://localhost:"+port, "the identity server, which also serves /ws (default: the demo's)")
	user := flag.String("user", "demo", "the user")
	password := flag.String("password", "demo", "the user's password")
	code := flag.String("code", "BHP", "the security's code on ASX")
	n := flag.Int("n", 5, "how many ticks to print")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *issuer, *user, *password, *code, *n); err != nil {
		fmt.Fprintln(os.Stderr, "quote:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, issuer, user, password, code string, n int) error {
	cfg := &oauth2.Config{
		ClientID: "demo-app",
		Endpoint: oauth2.Endpoint{TokenURL: issuer + "/connect/token", AuthStyle: oauth2.AuthStyleInParams},
		Scopes:   []string{"Service/Market"},
	}
	tok, err := cfg.PasswordCredentialsToken(ctx, user, password)
	if err != nil {
		return fmt.Errorf("signing in: %w", err)
	}
	ws := "ws" + strings.TrimPrefix(issuer, "http") + "/ws?version=1.1"
	d := websocket.Dialer{Subprotocols: []string{"ServiceJson"}, HandshakeTimeout: 10 * time.Second}
	c, _, err := d.DialContext(ctx, ws, http.Header{"Authorization": {"Bearer " + tok.AccessToken}})
	if err != nil {
		return fmt.Errorf("opening %s: %w", ws, err)
	}
	defer c.Close()
	topic := "Security!" + code + ".ASX"
	if err := c.WriteJSON(map[string]any{"Controller": "Market", "Topic": topic, "Action": "Sub", "TransactionID": 1}); err != nil {
		return err
	}
	fmt.Printf("subscribed to %s as %s\n", topic, user)
	for ticks := 0; ticks < n; {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m struct {
			Controller, Topic, Action string
			Data                      json.RawMessage
		}
		if err := c.ReadJSON(&m); err != nil {
			return err
		}
		if m.Action == "Error" {
			return fmt.Errorf("the service refused %s: %s", m.Topic, m.Data)
		}
		var q struct {
			Last, BestBid, BestAsk json.Number
			NumberOfTrades         int64
		}
		if m.Topic != topic || json.Unmarshal(m.Data, &q) != nil || q.Last == "" {
			continue // the confirmation, or not a price
		}
		ticks++
		fmt.Printf("%s  last %s  bid %s  ask %s  trades %d\n", code, q.Last, q.BestBid, q.BestAsk, q.NumberOfTrades)
	}
	_ = c.WriteJSON(map[string]any{"Controller": "Market", "Topic": topic, "Action": "Unsub", "TransactionID": 2})
	return c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}
