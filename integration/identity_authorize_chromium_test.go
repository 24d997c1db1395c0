package integration

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"
)

// The browser flows in a real browser: Debian's headless Chromium (test.sh
// installs it), driven with chromedp. What only a browser checks is checked
// here: the login form's CSP lets its submission redirect to the relying
// party, the form_post page's script runs under its nonce, the cookies
// are kept and sent, and a relying party on another site (127.0.0.1, the
// identity server being on localhost) gets the response.

const chromiumTimeout = 90 * time.Second

// chromium is a headless Chromium for the test, or a skip naming why not.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on PATH: test.sh installs Debian's chromium, and in CI nothing skips")
		}
		t.Skip("no Chromium on PATH (test.sh installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests may run as root
		chromedp.WindowSize(1100, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, chromiumTimeout)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// relyingParty is a callback on another site than the identity server
// (127.0.0.1), recording the query of each request.
type relyingParty struct {
	url string
	got chan url.Values
	srv *http.Server
}

func newRelyingParty(t *testing.T) *relyingParty {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rp := &relyingParty{url: "http://" + ln.Addr().String() + "/callback", got: make(chan url.Values, 4)}
	rp.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			rp.got <- r.URL.Query()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!DOCTYPE html><title>relying party</title><p id=done>back at the relying party</p>"))
	})}
	go func() { _ = rp.srv.Serve(ln) }()
	t.Cleanup(func() { _ = rp.srv.Close() })
	return rp
}

// artifact keeps b as a test artifact under integration/artifacts.
func artifact(t *testing.T, name string, b []byte) {
	t.Helper()
	dir := filepath.Join(repoRoot, "integration", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestChromiumCodeFlow: the code flow with PKCE through the login page, in
// Chromium, back to a relying party on another site; the code exchanged
// with golang.org/x/oauth2. A screenshot of the login page is kept.
func TestChromiumCodeFlow(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	rp := newRelyingParty(t)
	cfg := demoAppConfig(t, g)
	cfg.Endpoint.AuthURL = g.Issuer + "/connect/authorize"
	cfg.RedirectURL = rp.url
	cfg.Scopes = []string{"openid", "profile", "Service/Market"}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("chromium-state", oauth2.S256ChallengeOption(verifier))

	if err := chromedp.Do(ctx, chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.ID("username"))); err != nil {
		t.Fatalf("Chromium, login page: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		t.Fatalf("Chromium, login: %v", err)
	}
	artifact(t, "login-page.png", shot)
	var v url.Values
	select {
	case v = <-rp.got:
	case <-ctx.Done():
		t.Fatal("the relying party got no callback")
	}
	if v.Get("state") != "chromium-state" || v.Get("code") == "" || v.Get("iss") != g.Issuer {
		t.Fatalf("callback: state %q, code %t, iss %q", v.Get("state"), v.Get("code") != "", v.Get("iss"))
	}
	g.AddSecret(v.Get("code"))
	tok, err := cfg.Exchange(clientContext(t, g), v.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("Exchange: %v", err)
	}
	// The session cookie came back: the next authorization needs no login.
	if err := chromedp.Do(ctx, chromedp.Navigate(cfg.AuthCodeURL("again", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("done"))); err != nil {
		t.Fatalf("second authorization: %v", err)
	}
	if v := <-rp.got; v.Get("state") != "again" || v.Get("code") == "" {
		t.Fatalf("second callback: %v", v)
	}
}

// TestChromiumHybridFormPostAndImplicit: demo-web through the demo's own
// relying party pages: login, consent, a form_post response posted by the
// page's script; then, started from the demo's page, an implicit response
// in the fragment read by the callback page's script.
func TestChromiumHybridFormPostAndImplicit(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	authURL := func(rt, mode, state string) string {
		v := url.Values{"client_id": {webClient}, "response_type": {rt}, "redirect_uri": {webCallback(g)},
			"scope": {"openid profile email Service/Market"}, "state": {state}, "nonce": {"n-" + state}}
		if mode != "" {
			v.Set("response_mode", mode)
		}
		return g.Issuer + "/connect/authorize?" + v.Encode()
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(authURL("code id_token", "form_post", "fp")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[value=allow]`)),
		chromedp.Click(chromedp.CSS(`button[value=allow]`)),
		chromedp.WaitVisible(chromedp.ID("posted")),
	)
	if err != nil {
		t.Fatalf("Chromium, form_post: %v", err)
	}
	posted, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("posted")))
	if err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`td[data-name=state]`)))
	if err != nil {
		t.Fatal(err)
	}
	if state != "fp" || !strings.Contains(posted, "code") || !strings.Contains(posted, "id_token") {
		t.Fatalf("posted form: state %q, %q", state, posted)
	}
	// The demo's start page keeps the state it sends, for the callback
	// page to compare; consent was given above for its scopes.
	if err := chromedp.Do(ctx, chromedp.Navigate(g.Issuer+"/demo/"),
		chromedp.Click(chromedp.CSS(`button[data-flow="id_token token"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#out .good`))); err != nil {
		t.Fatalf("Chromium, fragment: %v", err)
	}
	result, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#out .good`)))
	if err != nil {
		t.Fatal(err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#out h2`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(result, "state matches") || heading != "Fragment" {
		t.Fatalf("callback page: %q, %q", heading, result)
	}
	// The demo's Sign out sends the ID token it got as id_token_hint: the
	// server logs out without asking (no confirmation page) and comes back
	// with the state; the session is gone (prompt=none: login_required).
	stepCtx, cancelStep := context.WithTimeout(ctx, 20*time.Second)
	defer cancelStep()
	if err := chromedp.Do(stepCtx, chromedp.Navigate(g.Issuer+"/demo/"),
		chromedp.Click(chromedp.ID("logout")),
		chromedp.WaitVisible(chromedp.CSS(`main > p.good`))); err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("Chromium, the demo's Sign out: %v (at %.600s)", err, where)
	}
	signedOut, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main > p.good`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(signedOut, "Signed out") {
		t.Fatalf("after Sign out: %q", signedOut)
	}
	silent := authURL("id_token", "", "after") + "&prompt=none"
	if err := chromedp.Do(ctx, chromedp.Navigate(silent), chromedp.WaitVisible(chromedp.CSS(`#out h2`))); err != nil {
		t.Fatalf("Chromium, prompt=none after Sign out: %v", err)
	}
	frag, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(frag, "error=login_required") {
		t.Fatalf("prompt=none after Sign out: %q", frag)
	}
}

// TestChromiumReadmeCodeFlow: the code-flow example of docs/getting-started.md, as a newcomer follows
// it: its URL opened in a browser, a login as demo, the callback page showing the
// code without calling the response forged, and the exchange with the README's
// verifier giving tokens.
// It failed when: the callback page said "state does NOT match: refuse this response"
// for the README's own URL, and showed no way to exchange the code.
func TestChromiumReadmeCodeFlow(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	g := StartGatehouse(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	var link, verifier string
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "http://localhost:8080/connect/authorize?client_id=demo-app&response_type=code") {
			link = strings.TrimSpace(line)
		}
		if _, v, ok := strings.Cut(line, "code_verifier="); ok && verifier == "" {
			verifier, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		}
	}
	if link == "" || verifier == "" {
		t.Fatalf("the README's code-flow URL (%q) or verifier (%q) not found", link, verifier)
	}
	port := strconv.Itoa(g.Port)
	link = strings.NewReplacer("localhost:8080", "localhost:"+port, "localhost%3A8080", "localhost%3A"+port).Replace(link)
	err = chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("exchange")))
	if err != nil {
		where, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("Chromium, the README's URL: %v (at %.600s)", err, where)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	query, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := url.ParseQuery(strings.TrimPrefix(query, "?"))
	code := v.Get("code")
	g.AddSecret(code)
	if code == "" || strings.Contains(page, "does NOT match") || !strings.Contains(page, "code="+code) || !strings.Contains(page, "xyz") {
		t.Fatalf("callback page for the README's URL: %.800s", page)
	}
	resp, body := g.PostToken(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {"demo-app"}, "code": {code},
		"redirect_uri": {g.Issuer + "/demo/callback"}, "code_verifier": {verifier}}, "", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"access_token"`) {
		t.Fatalf("the README's exchange: %d %.300s", resp.StatusCode, body)
	}
}
