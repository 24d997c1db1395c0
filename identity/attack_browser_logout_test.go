package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
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

// resubmit submits p's form (a Repost page) as its script does: a post
// from our own page, same-site, with the browser's cookies.
func (b *browser) resubmit(p page) page {
	b.t.Helper()
	m := regexp.MustCompile(`<form method="post" action="([^"]*)">`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, "document.forms[0].submit()") {
		b.t.Fatalf("not a page that posts its form: %d %s", p.status, p.body)
	}
	return b.post(m[1], p.fields())
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
	if f := p.fields(); f.Get("id_token_hint") != lf.idToken || f.Get("state") != "bye-x" || f.Get("resent") != "1" {
		t.Fatalf("a cross-site POST without the session cookie: %d, fields %v, want the page that posts them again", p.status, f)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1") {
		t.Errorf("the re-posting page's CSP %q", csp)
	}
	p = lf.b.resubmit(p)
	if lf.loggedIn() {
		t.Fatalf("the session is alive after the relying party's logout form (%d %v)", p.status, p.location)
	}
	if !strings.Contains(p.body, `href="`+spaLoggedOut+`?state=bye-x"`) {
		t.Errorf("the logged-out page does not lead back to the relying party: %d %s", p.status, p.body)
	}

	// A browser with no session: sent back to the relying party after
	// the one re-post.
	b := newBrowser(t, lf.fixture)
	p = b.resubmit(b.crossSitePost(PathEndSession, params, "https://spa.example"))
	if p.status != http.StatusSeeOther || p.location == nil || p.location.String() != spaLoggedOut+"?state=bye-x" {
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
	select { // the back-channel logout token for the session went out
	case <-lf.rc.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no back-channel logout token")
	}
	if tok := lf.exchange("spa", code, spaRedirect, verifier); tok.status != 400 || tok.str("error") != "invalid_grant" {
		t.Fatalf("a code of the ended session, exchanged after the logout: %d %s", tok.status, tok.raw)
	}
	// A code of a live session is exchanged as before.
	_, code = loggedIn(t, lf.fixture)
	if tok := lf.exchange("spa", code, spaRedirect, verifier); tok.status != 200 {
		t.Errorf("a code of a live session: %d %s", tok.status, tok.raw)
	}
}

// raceStore is the fixture's store with hooks where a logout and a code
// exchange of the same session can cross: after the logout lists the
// session's families, and before the exchange stores its family.
type raceStore struct {
	*sqlite.Store
	afterList    func()
	beforeCreate func()
}

func (s *raceStore) SessionRefreshFamilies(ctx context.Context, sid string) ([]store.RefreshFamily, error) {
	fams, err := s.Store.SessionRefreshFamilies(ctx, sid)
	if hook := s.afterList; hook != nil {
		s.afterList = nil
		hook()
	}
	return fams, err
}

func (s *raceStore) CreateRefreshFamily(ctx context.Context, f store.RefreshFamily, bound store.FamilyBound) error {
	if hook := s.beforeCreate; hook != nil {
		s.beforeCreate = nil
		hook()
	}
	return s.Store.CreateRefreshFamily(ctx, f, bound)
}

// raced is a logout fixture whose server runs on a raceStore.
func raced(t *testing.T) (*logoutFixture, *raceStore) {
	t.Helper()
	lf := newLogoutFixture(t)
	rs := &raceStore{Store: lf.st.(*sqlite.Store)}
	lf.serveOn(rs)
	return lf, rs
}

// A logout and a code exchange of its session that cross leave no
// working refresh token, whichever way they cross: a logout that ends the
// session while the exchange stores its family has the exchange revoke
// what it issued, and a family stored after the logout first looked is
// found when it looks again, after it ended the session.
func TestLogoutCrossingCodeExchange(t *testing.T) {
	t.Run("logout during the exchange", func(t *testing.T) {
		lf, rs := raced(t)
		code := lf.b.authorize(codeRequest("prompt", "none")).result(t, false).Get("code")
		rs.beforeCreate = func() {
			if res := lf.endSession(form("id_token_hint", lf.idToken)); res.status != 200 || lf.loggedIn() {
				t.Errorf("logout: %d", res.status)
			}
		}
		if tok := lf.exchange("spa", code, spaRedirect, verifier); tok.status != 400 || tok.str("error") != "invalid_grant" {
			t.Errorf("an exchange whose session a logout ended meanwhile: %d %s", tok.status, tok.raw)
		}
		claims, _ := lf.parseToken(lf.idToken, "JWT")
		fams, err := rs.SessionRefreshFamilies(t.Context(), claims["sid"].(string))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.RevokedAt.IsZero() {
				t.Errorf("family %s of the logged-out session is live", f.ID)
			}
		}
		if len(fams) < 2 {
			t.Errorf("%d families of the session, want the fixture's and the exchange's", len(fams))
		}
	})
	t.Run("exchange during the logout", func(t *testing.T) {
		lf, rs := raced(t)
		code := lf.b.authorize(codeRequest("prompt", "none")).result(t, false).Get("code")
		var rt string
		rs.afterList = func() {
			tok := lf.exchange("spa", code, spaRedirect, verifier)
			if rt = tok.str("refresh_token"); tok.status != 200 || rt == "" {
				t.Errorf("the exchange before the session ended: %d %s", tok.status, tok.raw)
			}
		}
		if res := lf.endSession(form("id_token_hint", lf.idToken)); res.status != 200 || lf.loggedIn() {
			t.Fatalf("logout: %d", res.status)
		}
		if rt == "" {
			t.Fatal("the exchange did not run")
		}
		if res := lf.refresh("spa", rt); res.status != 400 {
			t.Errorf("the refresh token of a family stored after the logout first looked: %d %s", res.status, res.raw)
		}
	})
}
