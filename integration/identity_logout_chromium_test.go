package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Logout and check-session in Chromium, with the relying party on another
// site (http://127.0.0.1:port; the identity server is on localhost), in
// Chromium's default cookie settings and with third-party cookies blocked.
// What each case shows is what docs/configuration/gatehouse_identity.md says of logout.

// logoutRP is a relying party on 127.0.0.1: its callback, a page that runs
// the check-session iframe, its front-channel logout page (which records
// iss, sid and whether the RP's own cookie came with the frame), its
// back-channel logout URI (which records the logout token), and the page
// the browser comes back to after the logout.
type logoutRP struct {
	base     string
	callback chan url.Values
	front    chan url.Values // iss, sid, and "cookie" when the RP's cookie came
	back     chan string
	srv      *http.Server
}

func newLogoutRP(t *testing.T, ln net.Listener, issuer string) *logoutRP {
	t.Helper()
	rp := &logoutRP{base: "http://" + ln.Addr().String(), callback: make(chan url.Values, 4),
		front: make(chan url.Values, 4), back: make(chan string, 4)}
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, "<!DOCTYPE html><title>relying party</title>%s", body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		// The RP's own session cookie, usable in a third-party frame only
		// where the browser allows third-party cookies.
		http.SetCookie(w, &http.Cookie{Name: "rp_session", Value: "1", Path: "/", Secure: true, SameSite: http.SameSiteNoneMode})
		rp.callback <- r.URL.Query()
		page(w, "<p id=done>back at the relying party</p>")
	})
	mux.HandleFunc("GET /fc", func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query()
		if c, err := r.Cookie("rp_session"); err == nil && c.Value == "1" {
			v.Set("cookie", "yes")
		}
		rp.front <- v
		page(w, "<p>front-channel logout</p>")
	})
	mux.HandleFunc("POST /bc", func(w http.ResponseWriter, r *http.Request) {
		rp.back <- r.PostFormValue("logout_token")
	})
	mux.HandleFunc("GET /loggedout", func(w http.ResponseWriter, r *http.Request) {
		page(w, "<p id=loggedout>"+template(r.URL.Query().Get("state"))+"</p>")
	})
	// The RP page of OpenID Connect Session Management §3.2: it frames the
	// identity server's check-session iframe and posts "client_id
	// session_state" to it; #status shows the last answer.
	mux.HandleFunc("GET /rp", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<p id=status>waiting</p><iframe id=op src="`+issuer+`/connect/checksession"></iframe>
<script>
var ss = new URLSearchParams(location.search).get("ss");
var op = document.getElementById("op");
window.addEventListener("message", function (e) {
	if (e.origin !== "`+issuer+`") return;
	document.getElementById("status").textContent = e.data;
});
op.addEventListener("load", function () {
	op.contentWindow.postMessage("rp-test " + ss, "`+issuer+`");
});
</script>`)
	})
	rp.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: mux}
	go func() { _ = rp.srv.Serve(ln) }()
	t.Cleanup(func() { _ = rp.srv.Close() })
	return rp
}

// template escapes s for the RP's pages (only ever the test's own state).
func template(s string) string { return strings.NewReplacer("<", "", ">", "", "&", "").Replace(s) }

// Cookie settings of the logout test: Chromium's own default, third-party
// cookies allowed, and blocked (DevTools' Network.setCookieControls).
const (
	cookiesDefault = "default cookie settings"
	cookiesAllowed = "third-party cookies allowed"
	cookiesBlocked = "third-party cookies blocked"
)

// logoutClientConfig is the demo with a public client rp-test whose URIs
// are on the RP's address.
func logoutClientConfig(t *testing.T, rpBase string) string {
	t.Helper()
	block := fmt.Sprintf(`client rp-test {
			public
			grant_types authorization_code
			scopes openid profile
			redirect_uris %[1]s/callback %[2]s/callback
			post_logout_redirect_uris %[1]s/loggedout
			frontchannel_logout_uri %[1]s/fc
			frontchannel_logout_session_required
			backchannel_logout_uri %[1]s/bc
		}

		`, rpBase, strings.Replace(rpBase, "127.0.0.1", "localhost", 1))
	return demoVariant(t, "logout-rp", configEdit{anchor: anchorServiceClient, insert: block, before: true})
}

// TestChromiumLogout: RP-initiated logout, the RP on another site
// (127.0.0.1) than the identity server (localhost), in three cookie
// settings. Login through the code flow; the check-session iframe, framed
// by the same RP on the identity server's own site (localhost, another
// port), answers "unchanged"; across sites it can read the browser-state
// cookie only where the browser gives a third-party frame its cookies: in
// headless Chromium 156 it answered "changed" in every setting (logged),
// and must with third-party cookies blocked. The end-session endpoint
// (the ID token as hint, a registered post-logout URI, state) ends the
// session; its logged-out page frames the RP's front-channel URI with iss
// and sid in every setting (without the RP's cookie when third-party
// cookies are blocked), and the browser comes back to the RP with state;
// the RP's back-channel URI gets a logout token that verifies against the
// JWKS; check-session then answers "changed" on both sites.
func TestChromiumLogout(t *testing.T) {
	for _, mode := range []string{cookiesDefault, cookiesAllowed, cookiesBlocked} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := chromium(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			rpBase := "http://" + ln.Addr().String()
			g := StartGatehouseWith(t, Options{Config: logoutClientConfig(t, rpBase)})
			rp := newLogoutRP(t, ln, g.Issuer)
			if mode != cookiesDefault {
				if err := setCookieControls(ctx, mode == cookiesBlocked); err != nil {
					t.Fatalf("blocking third-party cookies: %v", err)
				}
			}
			testChromiumLogout(t, ctx, g, rp, mode)
		})
	}
}

// setCookieControls restricts third-party cookies (Network.setCookieControls)
// or lifts the restriction. Chromium releases differ on the command's
// parameters: some require the two that disable the third-party cookie
// metadata and heuristics beside the restriction (Chromium 148 refuses the
// call without them, -32602), later protocol versions take the
// restriction alone. The full form is tried first, then the short one.
func setCookieControls(ctx context.Context, restrict bool) error {
	full := cdp.Command[cookieControls, cdp.Empty]{Method: network.CommandSetCookieControls}
	_, err := chromedp.Call(ctx, full, cookieControls{EnableThirdPartyCookieRestriction: restrict})
	if err == nil {
		return nil
	}
	_, err2 := chromedp.Call(ctx, network.SetCookieControls, network.SetCookieControlsParams{EnableThirdPartyCookieRestriction: restrict})
	if err2 == nil {
		return nil
	}
	return fmt.Errorf("with every parameter: %v; with the restriction alone: %w", err, err2)
}

// cookieControls are Network.setCookieControls' parameters in the form
// that requires all three.
type cookieControls struct {
	EnableThirdPartyCookieRestriction bool `json:"enableThirdPartyCookieRestriction"`
	DisableThirdPartyCookieMetadata   bool `json:"disableThirdPartyCookieMetadata"`
	DisableThirdPartyCookieHeuristics bool `json:"disableThirdPartyCookieHeuristics"`
}

func testChromiumLogout(t *testing.T, ctx context.Context, g *Gatehouse, rp *logoutRP, mode string) {
	sameSiteBase := strings.Replace(rp.base, "127.0.0.1", "localhost", 1)
	sameSite := &oauth2.Config{ClientID: "rp-test", RedirectURL: sameSiteBase + "/callback", Scopes: []string{"openid", "profile"},
		Endpoint: oauth2.Endpoint{AuthURL: g.Issuer + "/connect/authorize"}}
	cfg := &oauth2.Config{ClientID: "rp-test", RedirectURL: rp.base + "/callback", Scopes: []string{"openid", "profile"},
		Endpoint: oauth2.Endpoint{AuthURL: g.Issuer + "/connect/authorize", TokenURL: g.Issuer + "/connect/token",
			AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	err := chromedp.Do(ctx,
		chromedp.Navigate(cfg.AuthCodeURL("login-state", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "demo"),
		chromedp.SendKeys(chromedp.ID("password"), "demo"),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if err != nil {
		t.Fatalf("Chromium, login: %v", err)
	}
	cb := <-rp.callback
	g.AddSecret(cb.Get("code"))
	ss := cb.Get("session_state")
	if ss == "" || cb.Get("state") != "login-state" {
		t.Fatalf("callback: %v", cb)
	}
	tok, err := cfg.Exchange(clientContext(t, g), cb.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	idToken, _ := tok.Extra("id_token").(string)
	g.AddSecret(tok.AccessToken, idToken)
	if idToken == "" {
		t.Fatal("no ID token")
	}

	// The same RP on the identity server's own site (localhost, another
	// port: same site, another origin) gets its own session_state through
	// prompt=none; there the check-session frame is first-party.
	if err := chromedp.Do(ctx, chromedp.Navigate(sameSite.AuthCodeURL("same-site", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("prompt", "none"))), chromedp.WaitVisible(chromedp.ID("done"))); err != nil {
		t.Fatalf("Chromium, prompt=none: %v", err)
	}
	cb2 := <-rp.callback
	g.AddSecret(cb2.Get("code"))
	ssSame := cb2.Get("session_state")
	if got := checkSession(t, ctx, sameSiteBase, ssSame); got != "unchanged" {
		t.Errorf("same-site check-session before logout: %q, want unchanged", got)
	}
	// Across sites the frame reads the browser-state cookie only where
	// third-party cookies are allowed.
	before := checkSession(t, ctx, rp.base, ss)
	t.Logf("cross-site check-session before logout (%s): %q", mode, before)
	if mode == cookiesBlocked && before != "changed" {
		t.Errorf("cross-site check-session with third-party cookies blocked: %q, want changed", before)
	}

	end := g.Issuer + "/connect/endsession?" + url.Values{"id_token_hint": {idToken},
		"post_logout_redirect_uri": {rp.base + "/loggedout"}, "state": {"bye-state"}}.Encode()
	if err := chromedp.Do(ctx, chromedp.Navigate(end), chromedp.WaitVisible(chromedp.ID("loggedout"))); err != nil {
		t.Fatalf("Chromium, logout: %v", err)
	}
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("loggedout")))
	if err != nil || state != "bye-state" {
		t.Errorf("back at the RP with state %q, %v", state, err)
	}
	select {
	case fc := <-rp.front:
		if fc.Get("iss") != g.Issuer || fc.Get("sid") == "" {
			t.Errorf("front-channel logout: %v", fc)
		}
		got := fc.Get("cookie") == "yes"
		t.Logf("front-channel frame with the RP's cookie (%s): %t", mode, got)
		if mode == cookiesBlocked && got {
			t.Errorf("front-channel frame with the RP's cookie: %t (%s)", got, mode)
		}
		checkLogoutToken(t, g, <-rp.back, fc.Get("sid"))
	case <-time.After(20 * time.Second):
		t.Fatal("the front-channel logout frame never reached the RP")
	}
	for origin, ss := range map[string]string{rp.base: ss, sameSiteBase: ssSame} {
		if after := checkSession(t, ctx, origin, ss); after != "changed" {
			t.Errorf("check-session at %s after logout: %q, want changed", origin, after)
		}
	}
}

// checkSession opens the RP's check-session page for ss and returns the
// iframe's answer.
func checkSession(t *testing.T, ctx context.Context, base, ss string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/rp?ss="+url.QueryEscape(ss)),
		chromedp.WaitVisible(chromedp.CSS(`#status:not(:empty)`))); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("status")))
		if err != nil {
			t.Fatal(err)
		}
		if s != "waiting" {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "no answer"
}

// checkLogoutToken verifies a logout token as a back-channel receiver
// must (Back-Channel Logout 1.0 §2.6): signature by a key of the JWKS,
// typ logout+jwt, iss, aud, iat, jti, the event, sid, and no nonce.
func checkLogoutToken(t *testing.T, g *Gatehouse, token, sid string) {
	t.Helper()
	g.AddSecret(token)
	ctx := oidcContext(t, g)
	keys := oidc.NewRemoteKeySet(ctx, g.Issuer+"/.well-known/openid-configuration/jwks")
	payload, err := keys.VerifySignature(ctx, token)
	if err != nil {
		t.Fatalf("logout token signature: %v", err)
	}
	var c struct {
		Iss, Sub, Sid, Jti, Nonce string
		Aud                       any
		Iat, Exp                  int64
		Events                    map[string]any
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	hdr, _ := decodeJWT(t, token)
	_, event := c.Events["http://schemas.openid.net/event/backchannel-logout"]
	if hdr["typ"] != "logout+jwt" || c.Iss != g.Issuer || c.Aud != "rp-test" || c.Sid != sid || c.Sub == "" ||
		c.Jti == "" || c.Iat == 0 || c.Exp <= c.Iat || c.Nonce != "" || !event {
		t.Errorf("logout token: header %v claims %+v", hdr, c)
	}
}
