package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// TestChromiumDeviceFlow: the device flow's verification page in
// Chromium: the user opens verification_uri, logs in, types the code in
// lower case without its dash, and allows; golang.org/x/oauth2's
// DeviceAccessToken then gets the tokens. A second device's
// verification_uri_complete, opened in the same (logged-in) browser, goes
// straight to the confirmation, and Deny reaches the device as
// access_denied. What only a browser checks is checked here: the pages'
// CSP lets their forms post and redirect, the browser's own Origin and
// Sec-Fetch-Site pass the cross-site check, and the cookies are kept.
func TestChromiumDeviceFlow(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	cfg := deviceConfig(t, g)
	cctx, cancel := context.WithTimeout(clientContext(t, g), chromiumTimeout)
	defer cancel()

	da, err := cfg.DeviceAuth(cctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	typed := strings.ToLower(strings.ReplaceAll(da.UserCode, "-", ""))
	err = chromedp.Do(ctx,
		chromedp.Navigate(da.VerificationURI),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("user_code")),
		chromedp.SendKeys(chromedp.ID("user_code"), typed),
		chromedp.Click(chromedp.ID("continue")),
		chromedp.WaitVisible(chromedp.ID("allow")),
	)
	if err != nil {
		t.Fatalf("Chromium, entering the code: %v", err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("user-code")))
	if err != nil || shown != da.UserCode {
		t.Fatalf("the confirmation page shows %q (%v), want %q", shown, err, da.UserCode)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	artifact(t, "device-confirm-page.png", shot)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("allow")), chromedp.WaitVisible(chromedp.ID("device-result"))); err != nil {
		t.Fatalf("Chromium, Allow: %v", err)
	}
	if heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1"))); err != nil || heading != "Device connected" {
		t.Fatalf("after Allow: %q %v", heading, err)
	}
	tok, err := cfg.DeviceAccessToken(cctx, da)
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("DeviceAccessToken: %v", err)
	}

	// A second device, denied from the same browser.
	da2, err := cfg.DeviceAuth(cctx)
	if err != nil {
		t.Fatalf("second DeviceAuth: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(da2.VerificationURIComplete),
		chromedp.WaitVisible(chromedp.ID("deny")),
		chromedp.Click(chromedp.ID("deny")),
		chromedp.WaitVisible(chromedp.ID("device-result")),
	)
	if err != nil {
		t.Fatalf("Chromium, Deny: %v", err)
	}
	if heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1"))); err != nil || heading != "Request denied" {
		t.Fatalf("after Deny: %q %v", heading, err)
	}
	_, err = cfg.DeviceAccessToken(cctx, da2)
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); !ok || re.ErrorCode != "access_denied" {
		t.Fatalf("DeviceAccessToken after Deny: %v", err)
	}
	g.CheckLogs(t)
}
