package integration

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

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
