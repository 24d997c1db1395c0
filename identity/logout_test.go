package identity

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/store/sqlite"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/web"
)

const (
	spaLoggedOut = "http://127.0.0.1/logged-out"
	spaFrontURI  = "https://spa.example/fc"
)

// receiver is a back-channel logout URI: it records each logout_token.
type receiver struct {
	url string
	got chan string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{got: make(chan string, 8)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		rc.got <- r.FormValue("logout_token")
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/bc"
	return rc
}

// none reports that no logout token arrives within a short wait.
func (rc *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case tok := <-rc.got:
		t.Fatalf("a logout token was sent: %.20s...", tok)
	case <-time.After(200 * time.Millisecond):
	}
}

// logoutFixture is the browser clients, spa with every logout option and
// a back-channel receiver, and a browser logged in through spa's code
// flow, with the tokens it got.
type logoutFixture struct {
	*fixture
	b       *browser
	rc      *receiver
	authz   url.Values // the authorization response
	idToken string
	rt      string // the refresh token
}

func newLogoutFixture(t *testing.T) *logoutFixture {
	t.Helper()
	rc := newReceiver(t)
	f := newFixture(t, withBrowserClients, func(c *Config) {
		for i := range c.Clients {
			if c.Clients[i].ID == "spa" {
				c.Clients[i].PostLogoutRedirectURIs = []string{spaLoggedOut}
				c.Clients[i].FrontchannelLogoutURI = spaFrontURI
				c.Clients[i].FrontchannelLogoutSessionRequired = true
				c.Clients[i].BackchannelLogoutURI = rc.url
				c.Clients[i].LogoutRevokesRefresh = true
			}
			if c.Clients[i].ID == "web" {
				c.Clients[i].PostLogoutRedirectURIs = []string{"https://web.example/bye"}
			}
		}
	})
	b := newBrowser(t, f)
	res := b.login(b.authorize(codeRequest()), "demo", "demo-pw")
	v := res.result(t, false)
	tok := f.exchange("spa", v.Get("code"), spaRedirect, verifier)
	if tok.status != 200 || tok.str("id_token") == "" || tok.str("refresh_token") == "" {
		t.Fatalf("exchange: %d %s", tok.status, tok.raw)
	}
	return &logoutFixture{fixture: f, b: b, rc: rc, authz: v, idToken: tok.str("id_token"), rt: tok.str("refresh_token")}
}

// endSession opens the end-session endpoint with params.
func (lf *logoutFixture) endSession(params url.Values) page {
	lf.t.Helper()
	return lf.b.do(httptest.NewRequest(http.MethodGet, testIssuer+PathEndSession+"?"+params.Encode(), nil))
}

// loggedIn reports whether the browser's session still lets spa in
// without a login.
func (lf *logoutFixture) loggedIn() bool {
	lf.t.Helper()
	res := lf.b.authorize(codeRequest("prompt", "none"))
	return res.location != nil && res.result(lf.b.t, false).Get("code") != ""
}

// sign signs claims as an ID token with key and kid.
func sign(t *testing.T, key *rsa.PrivateKey, kid, typ string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"], tok.Header["typ"] = kid, typ
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEndSessionWithHint: RP-initiated logout with an expired
// id_token_hint of the session: no confirmation; the session ends (a
// prompt=none request is refused), the logged-out page frames spa's
// front-channel URI with iss and sid and goes back to the registered
// post-logout URI with state; spa gets a signed logout token on its
// back-channel URI; spa's refresh family of the session is revoked.
func TestEndSessionWithHint(t *testing.T) {
	lf := newLogoutFixture(t)
	claims, _ := lf.parseToken(lf.idToken, "JWT")
	sid, _ := claims["sid"].(string)
	if sid == "" {
		t.Fatal("the ID token has no sid")
	}
	lf.clock.Add(time.Hour) // the ID token has expired: still a hint
	res := lf.endSession(form("id_token_hint", lf.idToken, "post_logout_redirect_uri", spaLoggedOut, "state", "bye-1"))
	if res.status != 200 || !strings.Contains(res.body, "You are signed out") {
		t.Fatalf("end-session: %d %s", res.status, res.body)
	}
	frame := spaFrontURI + "?" + url.Values{"iss": {testIssuer}, "sid": {sid}}.Encode()
	if !strings.Contains(res.body, `src="`+strings.ReplaceAll(frame, "&", "&amp;")+`"`) {
		t.Errorf("no front-channel frame %q in %s", frame, res.body)
	}
	if !strings.Contains(res.body, `href="`+spaLoggedOut+`?state=bye-1"`) {
		t.Errorf("no way back to the relying party with state: %s", res.body)
	}
	if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-src https://spa.example") {
		t.Errorf("CSP %q does not allow the frame", csp)
	}
	if lf.loggedIn() {
		t.Fatal("the session survived the logout")
	}
	if r := lf.refresh("spa", lf.rt); r.status != 400 || r.str("error") != "invalid_grant" {
		t.Errorf("refresh after logout: %d %s", r.status, r.raw)
	}
	select {
	case tok := <-lf.rc.got:
		lt, hdr := lf.parseToken(tok, tokens.TypeLogoutToken)
		events, _ := lt["events"].(map[string]any)
		if lt["aud"] != "spa" || lt["sid"] != sid || lt["sub"] != "sub-demo" || lt["jti"] == nil || lt["iat"] == nil ||
			lt["nonce"] != nil || events == nil || events[tokens.BackchannelLogoutEvent] == nil || hdr["alg"] != "RS256" {
			t.Errorf("logout token claims %v header %v", lt, hdr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no logout token reached the back-channel URI")
	}
}

// TestSessionState: an authorization response carries session_state, as
// the check-session iframe computes it from the browser-state cookie; the
// cookie goes at logout, so the same session_state no longer matches.
func TestSessionState(t *testing.T) {
	lf := newLogoutFixture(t)
	ss := lf.authz.Get("session_state")
	dot := strings.LastIndex(ss, ".")
	if dot < 0 {
		t.Fatalf("session_state %q", ss)
	}
	stateOf := func() string {
		for _, c := range lf.b.jar.Cookies(mustURL(t, testIssuer+PathCheckSession)) {
			if c.Name == "gatehouse.session_state" {
				return c.Value
			}
		}
		return ""
	}
	origin := web.Origin(spaRedirect)
	if stateOf() == "" || session.SessionState("spa", origin, stateOf(), ss[dot+1:]) != ss {
		t.Fatalf("session_state %q does not match the browser state %q", ss, stateOf())
	}
	lf.endSession(form("id_token_hint", lf.idToken))
	if session.SessionState("spa", origin, stateOf(), ss[dot+1:]) == ss {
		t.Fatal("the browser state did not change at logout")
	}
	page := lf.b.do(httptest.NewRequest(http.MethodGet, testIssuer+PathCheckSession, nil))
	if page.status != 200 || !strings.Contains(page.body, `"gatehouse.session_state"`) ||
		!strings.Contains(page.header.Get("Content-Security-Policy"), "frame-ancestors *") ||
		page.header.Get("X-Frame-Options") != "" {
		t.Fatalf("check-session iframe: %d %v", page.status, page.header)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestEndSessionConfirmation: without a hint the user confirms on a page
// whose form is bound to the session; the confirmed post logs out and
// goes back with state.
func TestEndSessionConfirmation(t *testing.T) {
	lf := newLogoutFixture(t)
	res := lf.endSession(form("client_id", "web", "post_logout_redirect_uri", "https://web.example/bye", "state", "s2"))
	if res.status != 200 || !strings.Contains(res.body, `id="confirm-logout"`) || !lf.loggedIn() {
		t.Fatalf("confirmation page: %d %s", res.status, res.body)
	}
	fields := res.fields()
	if fields.Get("csrf_token") == "" || fields.Get("state") != "s2" {
		t.Fatalf("fields %v", fields)
	}
	fields.Set("confirm", "yes")
	out := lf.b.post(PathEndSession, fields)
	// spa joined the session and has a front-channel URI: the page frames
	// it, then goes back to web with state.
	if out.status != 200 || !strings.Contains(out.body, `href="https://web.example/bye?state=s2"`) || lf.loggedIn() {
		t.Fatalf("confirmed: %d %s", out.status, out.body)
	}
	<-lf.rc.got
}

// TestEndSessionHostile: each request is refused with an error page (no
// redirect), and nothing changes: the session lives, no logout token is
// sent, the refresh token still works.
func TestEndSessionHostile(t *testing.T) {
	lf := newLogoutFixture(t)
	kid, key := lf.srv.SigningKeyForTest()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(mut func(jwt.MapClaims)) jwt.MapClaims {
		c, _ := lf.parseToken(lf.idToken, "JWT")
		mut(c)
		return c
	}
	same := func(jwt.MapClaims) {}
	hmacHint := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(same))
		tok.Header["kid"] = kid
		s, _ := tok.SignedString([]byte("secret"))
		return s
	}()
	noneHint := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims(same))
		tok.Header["kid"] = kid
		s, _ := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		return s
	}()
	// Our own key, under an algorithm the hint may not use.
	ps256Hint := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodPS256, claims(same))
		tok.Header["kid"], tok.Header["typ"] = kid, "JWT"
		s, _ := tok.SignedString(key)
		return s
	}()
	parts := strings.Split(lf.idToken, ".")
	tampered := parts[0] + "." + strings.TrimRight(jwtSegment(t, claims(func(c jwt.MapClaims) { c["sub"] = "sub-other" })), "=") + "." + parts[2]
	for _, tc := range []struct {
		name   string
		params url.Values
		status int
	}{
		{"open redirect", form("id_token_hint", lf.idToken, "post_logout_redirect_uri", "https://evil.example/"), 400},
		{"redirect prefix", form("id_token_hint", lf.idToken, "post_logout_redirect_uri", spaLoggedOut+"/x"), 400},
		{"redirect of another client", form("id_token_hint", lf.idToken, "post_logout_redirect_uri", "https://web.example/bye"), 400},
		{"redirect without a client", form("post_logout_redirect_uri", spaLoggedOut), 400},
		{"unknown client_id", form("client_id", "nope", "post_logout_redirect_uri", spaLoggedOut), 400},
		{"client_id not the hint's audience", form("id_token_hint", lf.idToken, "client_id", "web"), 400},
		{"hint signed by another key", form("id_token_hint", sign(t, other, kid, "JWT", claims(same))), 400},
		{"hint with a tampered payload", form("id_token_hint", tampered), 400},
		{"hint of another audience", form("id_token_hint", sign(t, key, kid, "JWT", claims(func(c jwt.MapClaims) { c["aud"] = "stranger" }))), 400},
		{"hint of two audiences", form("id_token_hint", sign(t, key, kid, "JWT", claims(func(c jwt.MapClaims) { c["aud"] = []string{"spa", "web"} }))), 400},
		{"hint of another issuer", form("id_token_hint", sign(t, key, kid, "JWT", claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }))), 400},
		{"access token as hint", form("id_token_hint", sign(t, key, kid, "at+jwt", claims(same))), 400},
		{"hint HS256", form("id_token_hint", hmacHint), 400},
		{"hint PS256 by our key", form("id_token_hint", ps256Hint), 400},
		{"hint alg none", form("id_token_hint", noneHint), 400},
		{"hint garbage", form("id_token_hint", "a.b.c"), 400},
		{"state too long", form("id_token_hint", lf.idToken, "state", strings.Repeat("s", 2049)), 400},
		{"hint too long", form("id_token_hint", strings.Repeat("a", 9000)), 400},
		{"repeated parameter", url.Values{"state": {"a", "b"}}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := lf.endSession(tc.params)
			if res.status != tc.status || res.location != nil || !strings.Contains(res.body, "Sign-out failed") {
				t.Fatalf("%d %v %s", res.status, res.location, res.body)
			}
			if !lf.loggedIn() {
				t.Fatal("the session ended")
			}
		})
	}
	// The confirmation form, posted cross-site or without its token.
	page := lf.endSession(form("state", "x"))
	good := page.fields()
	good.Set("confirm", "yes")
	noToken := url.Values{"confirm": {"yes"}}
	otherToken := url.Values{"confirm": {"yes"}, "csrf_token": {"AAAA" + good.Get("csrf_token")[4:]}}
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers []string
	}{
		{"cross-site fetch metadata", good, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		{"cross-site origin", good, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}},
		{"opaque origin", good, []string{"Sec-Fetch-Site", "", "Origin", "null"}},
		{"no token", noToken, nil},
		{"another token", otherToken, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := lf.b.post(PathEndSession, tc.form, tc.headers...)
			if res.status != http.StatusForbidden || res.location != nil {
				t.Fatalf("%d %s", res.status, res.body)
			}
			if !lf.loggedIn() {
				t.Fatal("the session ended")
			}
		})
	}
	// A hint of another session is no authority to end this one: the
	// user is asked.
	t.Run("hint of another session", func(t *testing.T) {
		res := lf.endSession(form("id_token_hint", sign(t, key, kid, "JWT", claims(func(c jwt.MapClaims) { c["sid"] = "another" }))))
		if res.status != 200 || !strings.Contains(res.body, `id="confirm-logout"`) || !lf.loggedIn() {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	// Nor is an ID token without a sid (a password or refresh grant's),
	// which, accepted expired, would otherwise end every later session of
	// its user without asking.
	t.Run("hint without a sid", func(t *testing.T) {
		res := lf.endSession(form("id_token_hint", sign(t, key, kid, "JWT", claims(func(c jwt.MapClaims) { delete(c, "sid") }))))
		if res.status != 200 || !strings.Contains(res.body, `id="confirm-logout"`) || !lf.loggedIn() {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
	lf.rc.none(t)
	if r := lf.refresh("spa", lf.rt); r.status != 200 {
		t.Fatalf("refresh after the refused requests: %d %s", r.status, r.raw)
	}
}

// jwtSegment is claims as a JWT payload segment.
func jwtSegment(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SigningString()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(s, ".")[1]
}

// TestEndSessionWithoutSession: a browser without a session is sent
// straight back; an RP's hint for an ended session needs no confirmation.
func TestEndSessionWithoutSession(t *testing.T) {
	lf := newLogoutFixture(t)
	lf.endSession(form("id_token_hint", lf.idToken))
	<-lf.rc.got
	res := lf.endSession(form("id_token_hint", lf.idToken, "post_logout_redirect_uri", spaLoggedOut, "state", "again"))
	if res.status != http.StatusFound || res.location == nil || res.location.String() != spaLoggedOut+"?state=again" {
		t.Fatalf("%d %v %s", res.status, res.location, res.body)
	}
	lf.rc.none(t)
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
