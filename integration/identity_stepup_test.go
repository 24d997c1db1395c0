package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The step-up to a second factor through the demo: Trading and OrderPad,
// which Caddyfile.example's second_factor names, for trader after a TOTP
// code of its seeded secret, and for the trading desk's client
// credentials.

// TestTradingNeedsASecondFactor: in the demo, trader's password grant
// leaves Trading and OrderPad out, and asking for them by name is
// invalid_scope; the code flow with a TOTP code of trader's seeded secret
// gets them, with amr naming the one-time password, and so does the
// trading desk's client credentials, its sub its client ID: it places an
// order in its own account (the query service makes it the owner), not in
// trader's, and the socket's Trading controller shows it its account. It
// failed when the users file's totp_secret was not seeded (no
// second-factor form: a token without them) and before Caddyfile.example
// named the scopes in second_factor (the password grant kept them).
func TestTradingNeedsASecondFactor(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	if tok := g.PasswordGrant(t, "trader", "trader"); strings.Contains(tok.Scope, "Service/Trading") || strings.Contains(tok.Scope, "Service/OrderPad") {
		t.Fatalf("trader's password grant: scope %q, want neither Trading nor OrderPad", tok.Scope)
	}
	resp, body := g.PostToken(t, url.Values{"grant_type": {"password"}, "username": {"trader"}, "password": {"trader"},
		"client_id": {publicClient}, "scope": {"openid Service/Trading"}}, "", "")
	if e := decodeError(t, resp, body); e.Error != "invalid_scope" {
		t.Fatalf("trader's password grant asking for Trading: %d %s, want invalid_scope", resp.StatusCode, body)
	}
	tok := g.TradingToken(t)
	_, claims := decodeJWT(t, tok.AccessToken)
	if amr := fmt.Sprint(claims["amr"]); !strings.Contains(amr, "otp") || !strings.Contains(amr, "mfa") || claims["sub"] != subjectOf(t, "trader") {
		t.Fatalf("trader's token after a second factor: sub %v, amr %v", claims["sub"], claims["amr"])
	}
	desk := g.DeskToken(t)
	_, claims = decodeJWT(t, desk.AccessToken)
	if !sameScopes(desk.Scope, []string{"Service/Market", "Service/Trading", "Service/OrderPad"}) || claims["sub"] != deskClient {
		t.Fatalf("the desk's token: scope %q, sub %v", desk.Scope, claims["sub"])
	}
	order := `{"AccountId":"DESK-300001","Code":"BHP","Exchange":"ASX","Side":"Buy","Quantity":10,"Price":37.5}`
	if resp, _, body := g.query(t, desk.AccessToken, "/query/Order/insert", "application/json", order); resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != `{"RowsAffected":1}` {
		t.Fatalf("the desk's order: %d %s", resp.StatusCode, body)
	}
	_, r, rows := g.query(t, desk.AccessToken, "/query/Order/select?columns=AccountId,Owner", "application/json", `[]`)
	if len(r.Rows) != 1 || toText(r.Rows[0][0]) != "DESK-300001" || toText(r.Rows[0][1]) != deskClient {
		t.Fatalf("the desk's orders: %s", rows)
	}
	traders := strings.Replace(order, "DESK-300001", "TRD-200001", 1)
	if resp, _, body := g.query(t, desk.AccessToken, "/query/Order/insert", "application/json", traders); resp.StatusCode == http.StatusOK {
		t.Fatalf("the desk's order in trader's account: %d %s", resp.StatusCode, body)
	}
	c := liveSession(t, g, "desk", desk.AccessToken)
	if m := c.request(msg("Trading", "QueryAccounts", "Publish", "2"), "2"); m.Action == "Error" || !strings.Contains(string(m.Data), "DESK-300001") {
		t.Fatalf("QueryAccounts as the desk: %s, want its account", m)
	}
}

// TestChromiumDemoPlacesAnOrder: the demo relying party's trading button,
// in Chromium: the code flow asking for Trading and OrderPad, trader's
// password, the second-factor form with a TOTP code of trader's DEMO-ONLY
// secret, then the callback page exchanges the code and places an order
// with the access token, showing the query service's answer. It failed
// when the page asked for the scopes without a second factor to give
// (the token lacked OrderPad, and the page said so).
func TestChromiumDemoPlacesAnOrder(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	err := chromedp.Do(ctx, chromedp.Navigate(g.Issuer+"/demo/"),
		chromedp.Click(chromedp.CSS(`button[data-trade]`)),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "trader"),
		chromedp.SendKeys(chromedp.ID("password"), "trader"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("code")))
	if err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("Chromium, to the second-factor form: %v (at %.600s)", err, where)
	}
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), nextTOTPCode(t, g)),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("order")))
	if err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("Chromium, the order: %v (at %.600s)", err, where)
	}
	answer, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("order")))
	if err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(answer) != `{"RowsAffected":1}` || !strings.Contains(page, "Order placed in TRD-200001 (200)") {
		t.Fatalf("the callback page's order: %q in %.800s", answer, page)
	}
}
