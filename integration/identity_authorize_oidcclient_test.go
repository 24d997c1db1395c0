package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// oidc-client-ts (what the original platform's web client signs in with),
// in Chromium: signinRedirect and signinRedirectCallback from a relying
// party on another site, and signinSilent (an iframe with prompt=none).

// spaPage is the relying party's one page: it loads oidc-client-ts's
// browser build and, by its path, starts a sign-in, completes one, or
// renews one silently. Results land in #result as "ok <sub>" or
// "error <error>".
const spaPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>spa</title>
<script src="/oidc-client-ts.min.js"></script></head>
<body><p id="result"></p><script>
const settings = %s;
const mgr = new oidc.UserManager(settings);
const show = (text) => { const p = document.getElementById("result"); p.textContent = text; p.id = "done"; };
const fail = (e) => show("error " + (e.error || e.message || e));
switch (location.pathname) {
case "/start": mgr.signinRedirect().catch(fail); break;
case "/callback": mgr.signinRedirectCallback().then((u) => show("ok " + u.profile.sub + " " + u.profile.nonce), fail); break;
case "/renew": mgr.signinSilent().then((u) => show("ok " + u.profile.sub), fail); break;
case "/silent": mgr.signinSilentCallback().catch(fail); break;
}
</script></body></html>`

// spaServer serves the relying party on host (127.0.0.1 or localhost)
// for the identity server issuer; its origin is returned once listening.
type spaServer struct {
	origin string
	ln     net.Listener
}

func listenSPA(t *testing.T, host string) *spaServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return &spaServer{origin: "http://" + host + ":" + port, ln: ln}
}

func (s *spaServer) serve(t *testing.T, issuer string) {
	t.Helper()
	nodeDir := filepath.Join(repoRoot, "integration", "node")
	installNodeModules(t, nodeDir)
	lib, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", "oidc-client-ts", "dist", "browser", "oidc-client-ts.min.js"))
	if err != nil {
		t.Fatalf("oidc-client-ts's browser build (npm ci in integration/node): %v", err)
	}
	settings, _ := json.Marshal(map[string]any{
		"authority": issuer, "client_id": "spa-test", "redirect_uri": s.origin + "/callback",
		"silent_redirect_uri": s.origin + "/silent", "response_type": "code", "scope": "openid profile",
		"automaticSilentRenew": false, "silentRequestTimeoutInSeconds": 10,
	})
	page := fmt.Sprintf(spaPage, settings)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oidc-client-ts.min.js" {
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = w.Write(lib)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})}
	go func() { _ = srv.Serve(s.ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// spaClient is the demo's configuration with the client spa-test: public,
// the code flow, redirect URIs and CORS origins on both relying parties.
func spaClient(origins ...string) string { return spaClientWith("", origins...) }

// spaClientWith is spaClient with extra subdirectives (lines ending in a
// newline).
func spaClientWith(extra string, origins ...string) string {
	var uris []string
	for _, o := range origins {
		uris = append(uris, o+"/callback", o+"/silent")
	}
	return fmt.Sprintf("client spa-test {\n\t\t\tpublic\n\t\t\tgrant_types authorization_code\n\t\t\tscopes openid profile\n"+
		"\t\t\tredirect_uris %s\n\t\t\tallowed_origins %s\n%s\t\t}\n\n\t\t", strings.Join(uris, " "), strings.Join(origins, " "), extra)
}

// TestChromiumOIDCClientTS: oidc-client-ts signs in from a relying party
// on another site (127.0.0.1) through the login page, and renews silently
// from a relying party on the identity server's own site (localhost, other
// port). From the other site, signinSilent gets login_required: the
// session cookie is SameSite=Lax, so the browser does not send it in a
// cross-site iframe (a relying party there renews with its refresh token,
// or with prompt=none in a top-level redirect).
func TestChromiumOIDCClientTS(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	crossSite, sameSite := listenSPA(t, "127.0.0.1"), listenSPA(t, "localhost")
	g := StartGatehouseWith(t, Options{Config: demoVariant(t, "spa",
		configEdit{anchor: anchorServiceClient, insert: spaClient(crossSite.origin, sameSite.origin), before: true})})
	crossSite.serve(t, g.Issuer)
	sameSite.serve(t, g.Issuer)
	sub := subjectOf(t, "demo")

	result := func(t *testing.T, what string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("done"))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("done")))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}

	// signinRedirect, the login page, signinRedirectCallback.
	err := chromedp.Do(ctx,
		chromedp.Navigate(crossSite.origin+"/start"),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
	)
	if err != nil {
		t.Fatalf("signinRedirect: %v", err)
	}
	if got := result(t, "signinRedirectCallback"); !strings.HasPrefix(got, "ok "+sub) {
		t.Fatalf("signinRedirectCallback: %q", got)
	}

	// signinSilent on the identity server's site: the session answers.
	if err := chromedp.Do(ctx, chromedp.Navigate(sameSite.origin+"/renew")); err != nil {
		t.Fatal(err)
	}
	if got := result(t, "signinSilent, same site"); got != "ok "+sub {
		t.Fatalf("signinSilent on the same site: %q", got)
	}
	// signinSilent from another site: no cookie in the iframe.
	if err := chromedp.Do(ctx, chromedp.Navigate(crossSite.origin+"/renew")); err != nil {
		t.Fatal(err)
	}
	if got := result(t, "signinSilent, cross-site"); got != "error login_required" {
		t.Fatalf("signinSilent from another site: %q, want login_required (SameSite=Lax)", got)
	}
}
