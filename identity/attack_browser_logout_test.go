package identity

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// crossSitePost posts form to path as a relying party's page on another
// site makes the browser do it: Origin and Sec-Fetch-Site say so, and the
// SameSite=Lax session cookies are not sent (only SameSite=None cookies
// travel with a cross-site POST).
func (b *browser) crossSitePost(path string, form url.Values, origin string) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	return b.send(req, func(c *http.Cookie) bool { return c.Name != "gatehouse.session" && c.Name != "gatehouse.browser" })
}

// followIssuer follows p's redirects back to the issuer, as the browser
// does: top-level GET navigations, which carry the Lax cookies.
func (b *browser) followIssuer(p page) page {
	b.t.Helper()
	base, err := url.Parse(testIssuer + "/")
	if err != nil {
		b.t.Fatal(err)
	}
	for i := 0; i < 3 && p.location != nil; i++ {
		next := base.ResolveReference(p.location).String()
		if !strings.HasPrefix(next, testIssuer+"/") {
			break
		}
		p = b.do(httptest.NewRequest(http.MethodGet, next, nil))
	}
	return p
}

// A relying party's logout form posted from its own site (RP-Initiated
// Logout 1.0 §2 lets it POST) ends the session, although the browser
// sends no SameSite=Lax session cookie with that POST: the endpoint
// answers it with the same request as a GET, which carries the cookie.
// Before, it took the missing cookie for "signed out" and sent the
// browser back to the relying party as signed out, the session alive.
// A browser with no session at all ends at the relying party, once.
func TestCrossSitePostLogoutEndsSession(t *testing.T) {
	lf := newLogoutFixture(t)
	params := form("id_token_hint", lf.idToken, "post_logout_redirect_uri", spaLoggedOut, "state", "bye-x")
	p := lf.b.crossSitePost(PathEndSession, params, "https://spa.example")
	if p.status != http.StatusSeeOther || p.location == nil || p.location.Path != PathEndSession ||
		p.location.Query().Get("id_token_hint") != lf.idToken || p.location.Query().Get("state") != "bye-x" {
		t.Fatalf("a cross-site POST without the session cookie: %d %v, want 303 to the same request as a GET", p.status, p.location)
	}
	p = lf.b.followIssuer(p)
	if lf.loggedIn() {
		t.Fatalf("the session is alive after the relying party's logout form (%d %v)", p.status, p.location)
	}
	if !strings.Contains(p.body, `href="`+spaLoggedOut+`?state=bye-x"`) {
		t.Errorf("the logged-out page does not lead back to the relying party: %d %s", p.status, p.body)
	}

	// A browser with no session: sent back to the relying party.
	b := newBrowser(t, lf.fixture)
	p = b.followIssuer(b.crossSitePost(PathEndSession, params, "https://spa.example"))
	if p.status != http.StatusFound || p.location == nil || p.location.String() != spaLoggedOut+"?state=bye-x" {
		t.Errorf("a cross-site logout POST of a browser with no session: %d %v", p.status, p.location)
	}
}

// A code issued in a session just before its logout (the callback still
// loading in another tab, or a code an attacker holds with its verifier)
// is refused once the logout has ended the session: otherwise its
// exchange would start a refresh family the logout never saw, for a
// client that asked that logout revoke its refresh tokens.
func TestCodeOfEndedSessionRefused(t *testing.T) {
	lf := newLogoutFixture(t)
	v := lf.b.authorize(codeRequest("prompt", "none")).result(t, false)
	code := v.Get("code")
	if code == "" {
		t.Fatalf("no code: %v", v)
	}
	res := lf.endSession(form("id_token_hint", lf.idToken))
	if res.status != 200 || !strings.Contains(res.body, "You are signed out") || lf.loggedIn() {
		t.Fatalf("logout: %d %s", res.status, res.body)
	}
	<-lf.rc.got // the back-channel logout token for the session went out
	if tok := lf.exchange("spa", code, spaRedirect, verifier); tok.status != 400 || tok.str("error") != "invalid_grant" {
		t.Fatalf("a code of the ended session, exchanged after the logout: %d %s", tok.status, tok.raw)
	}
	// A code of a live session is exchanged as before.
	_, code = loggedIn(t, lf.fixture)
	if tok := lf.exchange("spa", code, spaRedirect, verifier); tok.status != 200 {
		t.Errorf("a code of a live session: %d %s", tok.status, tok.raw)
	}
}
