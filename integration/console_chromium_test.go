package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The console (gatehouse_console at / of the demo), in Chromium through
// the demo binary: sign in, quotes ticking over the message gateway, a
// refused venue and depth, IQL with its rows and a refused table as the
// service wrote it, a renewal that re-authenticates the same socket, an
// order after a step-up, and a phone's width.

// consolePage drives the console in one browser tab.
type consolePage struct {
	t    *testing.T
	ctx  context.Context
	g    *Gatehouse
	name string
}

// keepIfFailed keeps a screenshot and the page's text of a failed test.
// Deferred by the test: it runs before the test's cleanups, whose context
// (the browser's) is cancelled first.
func (c *consolePage) keepIfFailed() {
	if !c.t.Failed() {
		return
	}
	// The test's context may have run out: the screenshot gets a few
	// seconds of its own on the same browser.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(sctx, chromedp.FullScreenshot(90)); err == nil {
		artifact(c.t, c.name+"-failure.png", png)
	}
	if text, err := chromedp.Run(sctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`)); err == nil {
		artifact(c.t, c.name+"-failure.txt", []byte(text))
	}
}

// openConsole opens the console in Chromium at width×height. A test
// defers its keepIfFailed, which keeps a screenshot and the page's text
// under integration/artifacts when the test failed.
func openConsole(t *testing.T, g *Gatehouse, name string, width, height int64) *consolePage {
	t.Helper()
	ctx := chromium(t)
	c := &consolePage{t: t, ctx: ctx, g: g, name: name}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(g.URL+"/")); err != nil {
		t.Fatalf("opening the console: %v", err)
	}
	return c
}

func (c *consolePage) fatal(format string, args ...any) {
	c.t.Helper()
	where, _ := chromedp.Run(c.ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
	c.t.Fatalf(format+" (at %.1500s)", append(args, where)...)
}

// do runs actions, failing the test with what.
func (c *consolePage) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, actions...); err != nil {
		c.fatal("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression of the page.
func eval[T any](c *consolePage, expr string) T {
	c.t.Helper()
	v, err := chromedp.Run(c.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		c.fatal("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls the JavaScript condition cond until it is true or within
// has passed.
func (c *consolePage) waitFor(what, cond string, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		// The page may be between two documents: a missing element is a
		// false condition.
		if ok, err := chromedp.Run(c.ctx, chromedp.Evaluate[bool]("(() => { try { return !!("+cond+"); } catch (e) { return false; } })()")); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			c.fatal("%s: not within %v (%s)", what, within, cond)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// signIn signs in from the console's button with the login page.
func (c *consolePage) signIn(username, password string) {
	c.t.Helper()
	c.do("signing in as "+username,
		chromedp.WaitVisible(chromedp.ID("signin")),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), username),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	c.waitFor("the board after the sign-in", `!document.getElementById("board").hidden`, 20*time.Second)
	c.waitFor("the socket authenticated", `document.getElementById("sock-state").textContent.startsWith("authenticated")`, 20*time.Second)
}

// text is the text of the element with id.
func (c *consolePage) text(id string) string {
	c.t.Helper()
	return eval[string](c, fmt.Sprintf(`document.getElementById(%q).textContent`, id))
}

// accessToken is the access token the console holds (oidc-client-ts keeps
// its user in sessionStorage).
func (c *consolePage) accessToken() string {
	c.t.Helper()
	return eval[string](c, `(() => { for (let i = 0; i < sessionStorage.length; i++) { const k = sessionStorage.key(i);
		if (k.startsWith("oidc.user:")) return JSON.parse(sessionStorage.getItem(k)).access_token; } return ""; })()`)
}

// runIQL runs statement from the query box, with Ctrl+Enter in it, and
// waits for its answer.
func (c *consolePage) runIQL(statement string) {
	c.t.Helper()
	c.do("running "+statement,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("result").replaceChildren()`),
		chromedp.SetValue(chromedp.ID("iql"), statement),
		chromedp.Focus(chromedp.ID("iql")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(kb.ModifierCtrl)))
	c.waitFor("the answer to "+statement, `document.querySelector("#result p[data-status]")`, 15*time.Second)
}

// resultRows are the rows of the query box's result table, by column name.
func (c *consolePage) resultRows() []map[string]string {
	c.t.Helper()
	raw := eval[string](c, `JSON.stringify((() => { const t = document.querySelector("#result table"); if (!t) return null;
		const cols = [...t.tHead.rows[0].cells].map((c) => c.textContent);
		return [...t.tBodies[0].rows].map((r) => Object.fromEntries([...r.cells].map((td, i) => [cols[i], td.textContent]))); })())`)
	var rows []map[string]string
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		c.t.Fatalf("the result table: %v: %s", err, raw)
	}
	return rows
}

// socketSessions are the gateway's session ids of the socket
// authentications and re-authentications of sub in g's audit log.
func socketSessions(t *testing.T, g *Gatehouse, sub string) (auths, reauths []string) {
	t.Helper()
	for _, l := range readChain(t, g.AuditLog(), 0).lines {
		if l.Attrs["sub"] != sub || l.Attrs["transport"] != "socket" {
			continue
		}
		s, _ := l.Attrs["session"].(string)
		switch l.Kind {
		case "authentication":
			auths = append(auths, s)
		case "reauthentication":
			reauths = append(reauths, s)
		}
	}
	return auths, reauths
}

// TestChromiumConsole: demo in the console at 1280×800. Quotes tick, NZX
// and depth are refused with the reason, IQL shows its rows (ASX alone), a
// refused table shows the service's 403 as it wrote it, and a renewal
// re-authenticates the socket on the same connection: one session in the
// audit, authenticated once and re-authenticated once.
func TestChromiumConsole(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	c := openConsole(t, g, "console", 1280, 800)
	defer c.keepIfFailed()
	c.signIn("demo", "demo")
	sub := subjectOf(t, "demo")
	if got := c.text("id-sub"); got != sub {
		t.Errorf("the session panel's subject: %q, want %q", got, sub)
	}
	if got := c.text("id-entitlements"); got != "ASX:quotes" {
		t.Errorf("the session panel's entitlements: %q, want ASX:quotes", got)
	}
	if got := c.text("id-client"); got != "demo-app" {
		t.Errorf("the session panel's client: %q", got)
	}

	// Three price updates of BHP.ASX within 10 s of its first price, each
	// a price other than the one before (the page counts them in
	// data-ticks as they come, however fast).
	const bhp = `document.querySelector('#quote-table tr[data-symbol="BHP.ASX"]')`
	c.waitFor("BHP.ASX's first price", bhp+`.querySelector("[data-field=Last]").textContent !== ""`, 15*time.Second)
	c.waitFor("three price updates of BHP.ASX", `Number(`+bhp+`.dataset.ticks || 0) >= 3`, 10*time.Second)
	if change := eval[string](c, bhp+`.querySelector("[data-field=Change]").className`); !strings.Contains(change, "up") && !strings.Contains(change, "down") && !strings.Contains(change, "unchanged") {
		t.Errorf("BHP.ASX's change is not marked: %q", change)
	}

	// NZX is refused, saying why.
	c.waitFor("AIR.NZX refused", `document.querySelector('#quote-table tr[data-symbol="AIR.NZX"]').dataset.state === "refused"`, 10*time.Second)
	if got := eval[string](c, `document.querySelector('#quote-table tr[data-symbol="AIR.NZX"] td.state').textContent`); got != "refused: no entitlement to NZX:quotes (this session holds ASX:quotes)" {
		t.Errorf("AIR.NZX's refusal: %q", got)
	}
	// So is depth, demo holding no depth feed.
	c.do("BHP.ASX's depth", chromedp.Click(chromedp.CSS(`#quote-table tr[data-symbol="BHP.ASX"] button[aria-label="Depth of BHP.ASX"]`)))
	c.waitFor("BHP.ASX's depth refused", `(document.querySelector('#depths [data-symbol="BHP.ASX"] .state') || {}).textContent === "refused: no entitlement to ASX:depth (this session holds ASX:quotes)"`, 10*time.Second)

	// From the keyboard: Remove focused and Enter, the symbol typed and
	// Enter, a Depth button focused and Space.
	c.do("removing CBA.ASX from the keyboard", chromedp.Focus(chromedp.CSS(`button[aria-label="Remove CBA.ASX"]`)), chromedp.KeyEvent("\r"))
	c.waitFor("CBA.ASX removed", `!document.querySelector('#quote-table tr[data-symbol="CBA.ASX"]')`, 5*time.Second)
	c.do("adding CBA.ASX from the keyboard", chromedp.Focus(chromedp.ID("symbol")), chromedp.SendKeys(chromedp.ID("symbol"), "cba.asx\r"))
	c.waitFor("CBA.ASX live again", `(document.querySelector('#quote-table tr[data-symbol="CBA.ASX"]') || {dataset: {}}).dataset.state === "live"`, 10*time.Second)
	c.do("CBA.ASX's depth from the keyboard", chromedp.Focus(chromedp.CSS(`button[aria-label="Depth of CBA.ASX"]`)), chromedp.KeyEvent(" "))
	c.waitFor("CBA.ASX's depth asked", `document.querySelector('button[aria-label="Depth of CBA.ASX"]').getAttribute("aria-pressed") === "true" && document.querySelector('#depths [data-symbol="CBA.ASX"]')`, 5*time.Second)

	// IQL: the venue table's rows, ASX only for demo.
	c.runIQL("select Code, Exchange, Name from Security")
	rows := c.resultRows()
	if len(rows) == 0 {
		c.fatal("select from Security showed no rows")
	}
	for _, r := range rows {
		if r["Exchange"] != "ASX" {
			t.Errorf("demo sees a %s row: %v", r["Exchange"], r)
		}
	}

	// The structured select: columns and a criterion.
	c.do("a structured select", chromedp.Evaluate[chromedp.Void](`document.querySelector("#query details").open = true; document.getElementById("result").replaceChildren()`),
		chromedp.SetValue(chromedp.CSS(`#select-form input[name=table]`), "Security"),
		chromedp.SetValue(chromedp.CSS(`#select-form input[name=columns]`), "Code,Exchange"),
		chromedp.SetValue(chromedp.CSS(`#select-form input[name=column]`), "Code"),
		chromedp.SetValue(chromedp.CSS(`#select-form input[name=value]`), "BHP"),
		chromedp.Click(chromedp.CSS(`#select-form button[type=submit]`)))
	c.waitFor("the structured select's answer", `document.querySelector("#result p[data-status]")`, 15*time.Second)
	if rows := c.resultRows(); len(rows) != 1 || rows[0]["Code"] != "BHP" || rows[0]["Exchange"] != "ASX" || len(rows[0]) != 2 {
		c.fatal("the structured select showed %v, want BHP on ASX in two columns", rows)
	}
	// The structured insert, refused: demo has no OrderPad.
	c.do("a structured insert", chromedp.Evaluate[chromedp.Void](`document.getElementById("result").replaceChildren()`),
		chromedp.Click(chromedp.CSS(`#insert-form button[type=submit]`)))
	c.waitFor("the structured insert's answer", `document.querySelector("#result p[data-status]")`, 15*time.Second)
	if status := eval[string](c, `document.querySelector("#result p[data-status]").dataset.status`); status != "403" {
		c.fatal("an insert into Order by demo answered %s, want 403", status)
	}

	// A refused table: the 403 as the service wrote it.
	token := c.accessToken()
	c.runIQL("select * from Account")
	if status := eval[string](c, `document.querySelector("#result p[data-status]").dataset.status`); status != "403" {
		c.fatal("select from Account answered %s, want 403", status)
	}
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/query", strings.NewReader("select * from Account"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The same answer but for its Request-Id, which is each request's own.
	shown := eval[string](c, `document.querySelector("#result pre.answer").textContent`)
	var a, b struct{ Error map[string]string }
	if resp.StatusCode != 403 || json.Unmarshal([]byte(shown), &a) != nil || json.Unmarshal(want, &b) != nil ||
		a.Error["RequestId"] == "" || a.Error["RequestId"] == b.Error["RequestId"] ||
		strings.Replace(shown, a.Error["RequestId"], b.Error["RequestId"], 1) != string(want) {
		t.Errorf("the console shows %q; the service wrote %d %q", shown, resp.StatusCode, want)
	}

	// A renewal by refresh token re-authenticates the same socket.
	auths, reauths := socketSessions(t, g, sub)
	if len(auths) != 1 || len(reauths) != 0 {
		t.Fatalf("before the renewal, the audit holds socket authentications %v and re-authentications %v", auths, reauths)
	}
	c.do("renewing", chromedp.Click(chromedp.ID("renew")))
	c.waitFor("the socket re-authenticated", `document.getElementById("sock-reauths").textContent === "1"`, 20*time.Second)
	if got := c.text("sock-connections"); got != "1" {
		t.Errorf("connections opened after the renewal: %s, want 1", got)
	}
	if renewed := c.accessToken(); renewed == token || renewed == "" {
		t.Errorf("the renewal kept the access token")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		auths, reauths = socketSessions(t, g, sub)
		if len(reauths) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(auths) != 1 || len(reauths) != 1 || reauths[0] != auths[0] || auths[0] == "" {
		t.Errorf("after the renewal, socket authentications %v and re-authentications %v: want one session, re-authenticated once", auths, reauths)
	}
	// The quotes go on after it.
	ticks := eval[int](c, `Number(`+bhp+`.dataset.ticks || 0)`)
	c.waitFor("BHP.ASX ticking after the renewal", `Number(`+bhp+`.dataset.ticks || 0) > `+fmt.Sprint(ticks), 10*time.Second)

	// The screenshot of docs/console.md and docs/getting-started.md.
	png, err := chromedp.Run(c.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "console.png", png)

	// A callback URL the console did not send: its error is not shown as
	// the identity server's, and the tab's session goes on.
	c.do("a foreign callback", chromedp.Navigate(g.URL+"/callback?error=access_denied&error_description=Your+account+is+locked&state=bogus"))
	c.waitFor("the session resumed", `!document.getElementById("board").hidden && document.getElementById("status").textContent.startsWith("The sign-in could not complete")`, 20*time.Second)
	if text := eval[string](c, `document.body.innerText`); strings.Contains(text, "Your account is locked") || strings.Contains(text, "access_denied") {
		t.Errorf("the console shows a foreign callback's error: %.300s", text)
	}
	c.waitFor("the socket authenticated again", `document.getElementById("sock-state").textContent.startsWith("authenticated")`, 20*time.Second)

	// Sign out: the socket closed, the refresh token revoked, the
	// identity server's session ended, and back to the console.
	refresh := eval[string](c, `(() => { for (let i = 0; i < sessionStorage.length; i++) { const k = sessionStorage.key(i);
		if (k.startsWith("oidc.user:")) return JSON.parse(sessionStorage.getItem(k)).refresh_token; } return ""; })()`)
	c.do("signing out", chromedp.Click(chromedp.ID("signout")))
	c.waitFor("signed out, back at the console", `location.pathname === "/" && !document.getElementById("signin").hidden`, 20*time.Second)
	resp, err = http.PostForm(g.URL+"/connect/token", map[string][]string{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"demo-app"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "invalid_grant") {
		t.Errorf("the refresh token after the sign-out: %d %s", resp.StatusCode, body)
	}
	c.do("signing in again", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("username")))
	g.CheckLogs(t)
}

// TestChromiumConsoleTraderOrder: trader signs in with the password,
// sees depth and NZX, asks to place an order, steps up with a TOTP code,
// and the order placed on return shows in the query box; at a phone's
// width nothing overflows sideways.
func TestChromiumConsoleTraderOrder(t *testing.T) {
	t.Parallel()
	const bhp = `document.querySelector('#quote-table tr[data-symbol="BHP.ASX"]')`
	g := StartGatehouse(t)
	c := openConsole(t, g, "console-trader", 1280, 800)
	defer c.keepIfFailed()
	c.signIn("trader", "trader")
	if got := c.text("id-entitlements"); got != "ASX:depth ASX:quotes NZX:quotes" {
		t.Errorf("trader's entitlements: %q", got)
	}
	if acr := c.text("id-acr"); !strings.Contains(acr, "sfa") {
		t.Errorf("trader's first sign-in: %q, want the single-factor class", acr)
	}
	c.waitFor("AIR.NZX live for trader", `document.querySelector('#quote-table tr[data-symbol="AIR.NZX"]').dataset.state === "live"`, 10*time.Second)
	c.do("BHP.ASX's depth", chromedp.Click(chromedp.CSS(`button[aria-label="Depth of BHP.ASX"]`)))
	c.waitFor("BHP.ASX's book", `document.querySelectorAll('#depths [data-symbol="BHP.ASX"] tbody tr').length > 0`, 10*time.Second)

	// The order asks for the step-up first.
	c.do("placing an order", chromedp.SetValue(chromedp.CSS(`#order-form input[name=quantity]`), "7"),
		chromedp.Click(chromedp.CSS(`#order-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("code")))
	c.do("the second factor", chromedp.SendKeys(chromedp.ID("code"), nextTOTPCode(t, g)),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	// Back: the order waits in the form, with trader's accounts to choose
	// from; nothing was placed unseen.
	c.waitFor("the order back in the form", `document.getElementById("order-ready")`, 20*time.Second)
	if q := eval[string](c, `document.querySelector("#order-form input[name=quantity]").value`); q != "7" {
		t.Errorf("the order's quantity after the step-up: %q, want 7", q)
	}
	if accounts := eval[string](c, `[...document.getElementById("order-account").options].map((o) => o.value).join(" ")`); accounts != "TRD-200001 TRD-200002" {
		t.Errorf("trader's accounts in the form: %q", accounts)
	}
	c.do("placing it in TRD-200001", chromedp.SetValue(chromedp.ID("order-account"), "TRD-200001"),
		chromedp.Click(chromedp.CSS(`#order-form button[type=submit]`)))
	c.waitFor("the order's answer", `document.querySelector("#order-result p[data-status]")`, 20*time.Second)
	if status := eval[string](c, `document.querySelector("#order-result p[data-status]").dataset.status`); status != "200" {
		c.fatal("the order answered %s", status)
	}
	if acr := c.text("id-acr"); !strings.Contains(acr, "mfa") || !strings.Contains(acr, "otp") {
		t.Errorf("after the step-up: %q, want the multi-factor class and otp", acr)
	}
	c.waitFor("the orders' query", `document.querySelector("#result table")`, 15*time.Second)
	found := false
	for _, r := range c.resultRows() {
		if r["Code"] == "BHP" && r["Exchange"] == "ASX" && r["Quantity"] == "7" && r["Side"] == "Buy" && r["AccountId"] == "TRD-200001" {
			found = true
		}
	}
	if !found {
		c.fatal("the order is not among the rows the query shows: %v", c.resultRows())
	}

	// An entitlement taken away mid-session: the NZX row ends, saying
	// why, and the socket's new rights are shown.
	runCLI(t, g, "user", "unentitle", "trader", "NZX:quotes")
	c.waitFor("AIR.NZX ended", `document.querySelector('#quote-table tr[data-symbol="AIR.NZX"]').dataset.state === "ended"`, 15*time.Second)
	if got := eval[string](c, `document.querySelector('#quote-table tr[data-symbol="AIR.NZX"] td.state').textContent`); got != "ended: no entitlement to NZX:quotes (this session holds ASX:depth ASX:quotes)" {
		t.Errorf("AIR.NZX's end: %q", got)
	}
	c.waitFor("the rights' change in the events", `document.getElementById("event-log").textContent.includes("The socket's rights changed")`, 10*time.Second)
	if rights := c.text("sock-rights"); !strings.Contains(rights, "entitled to ASX:depth ASX:quotes;") {
		t.Errorf("the socket's rights after the change: %q", rights)
	}
	if got := eval[string](c, bhp+`.dataset.state`); got != "live" {
		t.Errorf("BHP.ASX after NZX was taken: %q", got)
	}
	// The change refused the tokens issued before it: the next query is
	// answered 401, and the console renews and sends it again.
	c.runIQL("select Code, Exchange from Security")
	if status := eval[string](c, `document.querySelector("#result p[data-status]").dataset.status`); status != "200" {
		c.fatal("a query after the change answered %s, want 200 after a renewal", status)
	}
	if !eval[bool](c, `document.getElementById("event-log").textContent.includes("Token renewed with the refresh token")`) {
		t.Error("no renewal after the query's 401")
	}
	for _, r := range c.resultRows() {
		if r["Exchange"] != "ASX" {
			t.Errorf("after NZX was taken, trader sees a %s row", r["Exchange"])
		}
	}

	// A phone's width: nothing wider than the screen.
	c.do("a phone's width", chromedp.EmulateViewport(390, 844))
	if w := eval[int](c, `document.documentElement.scrollWidth`); w > 390 {
		if png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(90)); err == nil {
			artifact(t, "console-phone.png", png)
		}
		wide := eval[string](c, `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > 391).slice(0, 8).concat([document.querySelector("#quote-table").parentElement, document.querySelector("#quotes"), document.querySelector("#board"), document.querySelector("main"), document.body]).map((e) => e.tagName + "#" + e.id + "." + e.className + " " + Math.round(e.getBoundingClientRect().right) + "/" + getComputedStyle(e).gridTemplateColumns + "/" + getComputedStyle(e).overflowX).join(", ")`)
		t.Errorf("at 390 px the page is %d px wide: %s", w, wide)
	}
	g.CheckLogs(t)
}

// TestConsoleVendoredOIDCClient: the console's oidc-client-ts is the
// published build of the version the Node tests install (integration/node
// pins it): byte for byte, so the vendored copy is what npm serves.
func TestConsoleVendoredOIDCClient(t *testing.T) {
	t.Parallel()
	nodeDir := filepath.Join(repoRoot, "integration", "node")
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, err := os.ReadFile(filepath.Join(nodeDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	vendored, err := os.ReadFile(filepath.Join(repoRoot, "console", "assets", "vendor", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(vendored)); pkg.Dependencies["oidc-client-ts"] != v {
		t.Fatalf("integration/node pins oidc-client-ts %s, the console vendors %s", pkg.Dependencies["oidc-client-ts"], v)
	}
	installNodeModules(t, nodeDir)
	for _, f := range []struct{ npm, ours string }{
		{"dist/browser/oidc-client-ts.min.js", "oidc-client-ts.min.js"},
		{"LICENSE", "oidc-client-ts.LICENSE"},
	} {
		a, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", "oidc-client-ts", f.npm))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, "console", "assets", "vendor", f.ours))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("console/assets/vendor/%s differs from npm's oidc-client-ts/%s", f.ours, f.npm)
		}
	}
}

// TestChromiumConsoleRenewsAndReconnects: with demo-app's access tokens
// living 70 s, oidc-client-ts renews a minute before expiry, by itself,
// with the refresh token, and the console re-authenticates the open
// socket: no button pressed, no new connection, the quotes going on. Then
// a reload that changes the gateway's upstream closes the socket (1012):
// the console reconnects after its back-off, authenticates and subscribes
// again.
func TestChromiumConsoleRenewsAndReconnects(t *testing.T) {
	t.Parallel()
	variant := func(name, upstream string) string {
		return demoVariant(t, name,
			configEdit{anchor: "\t\tclient demo-app {\n", insert: "\t\t\taccess_token_lifetime 70s\n"},
			configEdit{anchor: "\tgatehouse_ws /ws {\n\t\tupstream ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}/\n",
				insert: "\tgatehouse_ws /ws {\n\t\tupstream " + upstream + "\n\t\tdrain_window 1s\n", replace: true})
	}
	g := StartGatehouseWith(t, Options{Config: variant("console-renew", "ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}/")})
	c := openConsole(t, g, "console-renew", 1280, 800)
	defer c.keepIfFailed()
	c.signIn("demo", "demo")
	first := c.accessToken()
	c.waitFor("the renewal by itself", `Number(document.getElementById("sock-reauths").textContent) >= 1`, 40*time.Second)
	if got := c.text("sock-connections"); got != "1" {
		t.Errorf("connections opened after the renewal: %s, want 1", got)
	}
	if c.accessToken() == first {
		t.Error("the access token was not renewed")
	}
	if !eval[bool](c, `document.getElementById("event-log").textContent.includes("Token renewed with the refresh token")`) {
		t.Error("the events do not show the renewal")
	}
	const bhp = `document.querySelector('#quote-table tr[data-symbol="BHP.ASX"]')`
	ticks := eval[int](c, `Number(`+bhp+`.dataset.ticks || 0)`)
	c.waitFor("BHP.ASX ticking after the renewal", `Number(`+bhp+`.dataset.ticks || 0) > `+fmt.Sprint(ticks), 10*time.Second)

	g.Reload(variant("console-reload", "ws://127.0.0.1:{$GATEHOUSE_BACKEND_PORT:9090}"))
	c.waitFor("the second connection authenticated", `document.getElementById("sock-connections").textContent === "2" && document.getElementById("sock-state").textContent.startsWith("authenticated")`, 30*time.Second)
	if !eval[bool](c, `document.getElementById("event-log").textContent.includes("Socket closed with 1012")`) {
		t.Error("the events do not show the close")
	}
	ticks = eval[int](c, `Number(`+bhp+`.dataset.ticks || 0)`)
	c.waitFor("BHP.ASX ticking on the new connection", bhp+`.dataset.state === "live" && Number(`+bhp+`.dataset.ticks || 0) > `+fmt.Sprint(ticks), 15*time.Second)

	// The user disabled: the gateway says the authority lapsed, the
	// console renews, the identity server refuses the refresh token, and
	// the tab is signed out, saying why.
	// Right after a renewal, so that the next one is ten seconds away: the
	// lapse is what renews.
	reauths := eval[int](c, `Number(document.getElementById("sock-reauths").textContent)`)
	c.waitFor("one more renewal", `Number(document.getElementById("sock-reauths").textContent) > `+fmt.Sprint(reauths), 20*time.Second)
	runCLI(t, g, "user", "disable", "demo")
	c.waitFor("signed out when the session ended", `!document.getElementById("signin").hidden && document.getElementById("status").textContent.startsWith("The session ended (invalid_grant)")`, 20*time.Second)
	// The log lists the newest first.
	lapse := eval[int](c, `document.getElementById("event-log").textContent.indexOf("Renewing the token (the session's authority lapsed)")`)
	failed := eval[int](c, `document.getElementById("event-log").textContent.indexOf("Renewal failed: invalid_grant")`)
	if lapse < 0 || failed < 0 || failed > lapse {
		t.Errorf("the events: lapse at %d, the renewal's refusal at %d; want the lapse, then the refusal", lapse, failed)
	}
	if kept := eval[int](c, `Object.keys(sessionStorage).length`); kept != 0 {
		t.Errorf("the tab kept %d items of an ended session", kept)
	}
}
