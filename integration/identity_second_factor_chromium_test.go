package integration

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// TestChromiumStepUpTOTP: the second factor in a real browser, through
// the demo (where Service/Trading and Service/OrderPad need one), with a
// socket held open throughout:
//   - trader's socket, authenticated with a password-grant token, has its
//     order message (Trading/PlaceOrder, Service/OrderPad) refused;
//   - on the account page, signed in with the password, trader's changes
//     wait for a code of the app (the demo's DEMO-ONLY secret); after it,
//     new recovery codes;
//   - the code flow asking for Trading and OrderPad asks for a code: one
//     three steps away is refused, the next step's passes, and the tokens
//     carry both scopes with acr mfa and amr pwd otp mfa;
//   - a second browser is refused the code just used, then passes with a
//     recovery code, which a third is refused;
//   - the socket, sent the new token in AuthToken, now has its order
//     message let through to the backend, without reconnecting.
//
// Screenshots of the account page and of the second-factor form are kept.
// (TradingToken's codes are not used here: this test keeps its own steps
// on its own gatehouse.)
func TestChromiumStepUpTOTP(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	rp := newRelyingParty(t)

	// The socket, before the step-up.
	market := g.PasswordGrant(t, "trader", "trader")
	if strings.Contains(market.Scope, "Service/OrderPad") {
		t.Fatalf("the password grant gave %q: the demo must require a second factor for it", market.Scope)
	}
	c, resp, err := dialWS(t, g, "/ws?version=1.1", "ServiceJson", market.AccessToken)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	const order = `{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":%d,"Data":{"Account":"T1","Code":"BHP.ASX","Side":"Buy","Quantity":1}}`
	if z := exchange(t, c, strings.Replace(order, "%d", "1", 1), 1); z.Action != "Error" || string(z.Data) != `"Authority"` {
		t.Fatalf("an order before the step-up: %+v %s", z, z.Data)
	}

	// The account page, in a browser of its own: signed in with the
	// password, trader's changes wait for a code of the app (the demo's
	// DEMO-ONLY secret); after it, new recovery codes.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil { // the browser starts
		t.Fatal(err)
	}
	account, cancelAccount := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancelAccount()
	step := time.Now().Unix() / 30
	err = chromedp.Do(account, chromedp.Navigate(g.URL+"/connect/account"), chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "trader"), chromedp.SendKeys(chromedp.ID("password"), "trader"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("verify-code")),
		chromedp.SendKeys(chromedp.ID("verify-code"), totpCode(t, traderTOTPSecret, step)),
		chromedp.Click(chromedp.CSS(`#verify-code ~ .actions button`)), chromedp.WaitVisible(chromedp.ID("password-codes")))
	if err != nil {
		t.Fatalf("account page, the app's code: %v", err)
	}
	if shot, err := chromedp.Run(account, chromedp.FullScreenshot(90)); err == nil {
		artifact(t, "account-page.png", shot)
	}
	err = chromedp.Do(account, chromedp.SendKeys(chromedp.ID("password-codes"), "trader"),
		chromedp.Click(chromedp.CSS(`button[value=recovery-codes]`)), chromedp.WaitVisible(chromedp.ID("recovery-codes")))
	if err != nil {
		t.Fatalf("account page, new recovery codes: %v", err)
	}
	codesText, err := chromedp.Run(account, chromedp.Text(chromedp.ID("recovery-codes")))
	if err != nil {
		t.Fatal(err)
	}
	recovery := strings.Fields(codesText)
	if len(recovery) != 10 {
		t.Fatalf("recovery codes shown: %q", codesText)
	}

	// The code flow asking for the scopes that place orders: a step-up.
	cfg := demoAppConfig(t, g)
	cfg.Endpoint.AuthURL = g.Issuer + "/connect/authorize"
	cfg.RedirectURL = rp.url
	cfg.Scopes = []string{"openid", "Service/Market", "Service/Trading", "Service/OrderPad"}
	verifier := oauth2.GenerateVerifier()
	err = chromedp.Do(ctx, chromedp.Navigate(cfg.AuthCodeURL("step-up", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "trader"), chromedp.SendKeys(chromedp.ID("password"), "trader"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("code")))
	if err != nil {
		t.Fatalf("no second-factor form after the password: %v", err)
	}
	if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90)); err == nil {
		artifact(t, "second-factor-form.png", shot)
	}
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), totpCode(t, traderTOTPSecret, step+3)),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("factor-error")))
	if err != nil {
		t.Fatalf("a code three steps away: %v", err)
	}
	used := totpCode(t, traderTOTPSecret, step+1) // the next step's: the window's ±1 accepts it
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), used),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("done")))
	if err != nil {
		t.Fatalf("the right code: %v", err)
	}
	v := <-rp.got
	g.AddSecret(v.Get("code"))
	tok, err := cfg.Exchange(clientContext(t, g), v.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	scope, _ := tok.Extra("scope").(string)
	if !strings.Contains(scope, "Service/Trading") || !strings.Contains(scope, "Service/OrderPad") {
		t.Fatalf("scope after the step-up: %q", scope)
	}
	wantMultiFactor(t, tok.AccessToken)

	// Another browser: the code just used is refused, a recovery code
	// passes once.
	for i, tc := range []struct {
		code string
		pass bool
	}{{used, false}, {recovery[0], true}, {recovery[0], false}} {
		other, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		err := chromedp.Do(other, chromedp.Navigate(cfg.AuthCodeURL("other", oauth2.S256ChallengeOption(verifier))),
			chromedp.WaitVisible(chromedp.ID("username")),
			chromedp.SendKeys(chromedp.ID("username"), "trader"), chromedp.SendKeys(chromedp.ID("password"), "trader"),
			chromedp.Click(chromedp.CSS(`button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("code")),
			chromedp.SendKeys(chromedp.ID("code"), tc.code), chromedp.Click(chromedp.CSS(`button[type=submit]`)))
		if err == nil {
			want := chromedp.ID("factor-error")
			if tc.pass {
				want = chromedp.ID("done")
			}
			err = chromedp.Do(other, chromedp.WaitVisible(want))
		}
		cancel()
		if err != nil {
			t.Fatalf("second browser, attempt %d (pass %t): %v", i, tc.pass, err)
		}
		if tc.pass {
			<-rp.got
		}
	}

	// The socket takes the new token and lets the order through.
	z := exchange(t, c, `{"Controller":"Auth","Topic":"AuthToken","TransactionID":2,"Data":{"Provider":"Bearer","AccessToken":"`+
		base64.StdEncoding.EncodeToString([]byte(tok.AccessToken))+`"}}`, 2)
	if !strings.Contains(string(z.Data), `"Result":"Success"`) || !strings.Contains(string(z.Data), "Service.OrderPad") {
		t.Fatalf("AuthToken after the step-up: %+v %s", z, z.Data)
	}
	if z := exchange(t, c, strings.Replace(order, "%d", "3", 1), 3); string(z.Data) == `"Authority"` {
		t.Fatalf("the order was refused after the step-up: %+v %s", z, z.Data)
	}
}

// wantMultiFactor checks an access token's acr and amr (its payload; the
// signature is the verifier's to check, elsewhere).
func wantMultiFactor(t *testing.T, token string) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		ACR string   `json:"acr"`
		AMR []string `json:"amr"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.ACR != "https://refeds.org/profile/mfa" || strings.Join(claims.AMR, " ") != "pwd otp mfa" {
		t.Fatalf("access token acr %q amr %v", claims.ACR, claims.AMR)
	}
}
