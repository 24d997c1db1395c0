package identity

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
) // sessionCookie is the browser's session cookie, if it has one.
func (b *browser) sessionCookie() *http.Cookie {
	u, _ := url.Parse(testIssuer + "/")
	for _, c := range b.jar.Cookies(u) {
		if c.Name == "gatehouse.session" {
			return c
		}
	}
	return nil
}

// TestLoginFormRefusals: a login form posted without its anti-forgery
// token, with another browser's, or from another site is refused before
// the password is looked at: no session, nothing counted.
func TestLoginFormRefusals(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	victim := newBrowser(t, f)
	form := victim.authorize(codeRequest()).fields()
	form.Set("username", "demo")
	form.Set("password", "demo-pw")
	attacker := newBrowser(t, f)
	attackerForm := attacker.authorize(codeRequest()).fields()
	hashes := f.srv.hashCount()

	for _, tc := range []struct {
		name    string
		mutate  func(url.Values) url.Values
		headers []string
		status  int
		message string
	}{
		{"token missing", func(v url.Values) url.Values { v.Del("csrf_token"); return v }, nil, http.StatusForbidden, "expired"},
		{"token of another browser", func(v url.Values) url.Values {
			v.Set("csrf_token", attackerForm.Get("csrf_token"))
			return v
		}, nil, http.StatusForbidden, "expired"},
		{"cross-site Origin", nil, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", ""}, http.StatusForbidden, "another site"},
		{"cross-site fetch", nil, []string{"Origin", "", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "another site"},
		{"same-site fetch", nil, []string{"Origin", "", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden, "another site"},
		{"opaque Origin", nil, []string{"Origin", "null", "Sec-Fetch-Site", ""}, http.StatusForbidden, "another site"},
		{"request tampered", func(v url.Values) url.Values {
			r := []byte(v.Get("request"))
			r[len(r)/2] ^= 1
			v.Set("request", string(r))
			return v
		}, nil, http.StatusBadRequest, "start again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range form {
				v[k] = append([]string(nil), vs...)
			}
			if tc.mutate != nil {
				v = tc.mutate(v)
			}
			p := victim.post(PathLogin, v, tc.headers...)
			if p.status != tc.status || p.location != nil || !strings.Contains(p.body, tc.message) {
				t.Fatalf("%d %v %s", p.status, p.location, p.body)
			}
			if victim.sessionCookie() != nil {
				t.Fatal("a refused login form set a session cookie")
			}
			if n := f.srv.hashCount() - hashes; n != 0 {
				t.Fatalf("a refused login form checked %d passwords", n)
			}
		})
	}
	// The untouched form still works.
	if p := victim.post(PathLogin, form); p.status != http.StatusSeeOther || victim.sessionCookie() == nil {
		t.Fatalf("the good form: %d %s", p.status, p.body)
	}
}

// TestLoginBruteForce: the login form counts failures as the password
// grant does, and a locked pair is refused even with the right password.
func TestLoginBruteForce(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.authorize(codeRequest())
	for i := 1; i <= 5; i++ {
		p = b.login(p, "demo", "wrong")
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "incorrect") || p.location != nil {
			t.Fatalf("attempt %d: %d %s", i, p.status, p.body)
		}
		if !strings.Contains(p.body, `value="demo"`) {
			t.Errorf("attempt %d: the username is not kept", i)
		}
	}
	if p = b.login(p, "demo", "demo-pw"); p.status != http.StatusUnauthorized {
		t.Fatalf("a locked pair logged in: %d %v", p.status, p.location)
	}
	// The password grant sees the same lock: one defence.
	if res := f.login("demo", "demo-pw"); res.str("error") != "invalid_grant" {
		t.Fatalf("password grant while locked: %d %s", res.status, res.raw)
	}
	f.clock.Add(16 * time.Minute)
	if p = b.login(p, "demo", "demo-pw"); p.status != http.StatusSeeOther {
		t.Fatalf("after the lockout: %d %s", p.status, p.body)
	}
}

// TestLoginSession: the session lives in the store under the hash of its
// cookie; prompt=login and max_age ask for the password again; a session
// of a user disabled since is no session.
func TestLoginSession(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b, _ := loggedIn(t, f)
	c := b.sessionCookie()
	if c == nil {
		t.Fatal("no session cookie")
	}
	bs := browserStore(f.st)
	sess, err := bs.Session(t.Context(), sha(c.Value))
	if err != nil || sess.Subject != "sub-demo" {
		t.Fatalf("session in the store: %+v %v", sess, err)
	}

	for name, params := range map[string]url.Values{
		"prompt=login":       codeRequest("prompt", "login"),
		"max_age=0":          codeRequest("max_age", "0"),
		"select_account":     codeRequest("prompt", "select_account"),
		"max_age passed (1)": codeRequest("max_age", "1"),
	} {
		f.clock.Add(2 * time.Second)
		p := b.authorize(params)
		if p.status != http.StatusOK || !strings.Contains(p.body, `name="password"`) {
			t.Fatalf("%s: %d %v", name, p.status, p.location)
		}
	}
	if p := b.authorize(codeRequest("max_age", "3600")); p.status != http.StatusFound {
		t.Fatalf("max_age not passed: %d", p.status)
	}
	// prompt=login then a login: a new session, and the response.
	p := b.login(b.authorize(codeRequest("prompt", "login")), "demo", "demo-pw")
	if v := p.result(t, false); v.Get("code") == "" {
		t.Fatalf("after prompt=login: %v", v)
	}
	if nc := b.sessionCookie(); nc == nil || nc.Value == c.Value {
		t.Fatal("a new login kept the session id")
	}
	if _, err := bs.Session(t.Context(), sha(c.Value)); err == nil {
		t.Fatal("the replaced session is still in the store")
	}

	u, _ := f.st.User(t.Context(), "demo")
	u.Disabled = true
	if err := f.st.UpdateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if p := b.authorize(codeRequest("prompt", "none")); p.result(t, false).Get("error") != "login_required" {
		t.Fatalf("a disabled user's session: %d %v", p.status, p.location)
	}
}

// A burst of wrong passwords posted in parallel through the login form
// (each with a good anti-forgery token) cannot try more than the lockout
// allows: the right password afterwards is refused.
func TestLoginFormBurstLocks(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b := newBrowser(t, f)
	p := b.authorize(codeRequest())
	fm := p.fields()
	fm.Set("username", "demo")
	fm.Set("password", "wrong")
	const n = 16
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			statuses <- b.post(PathLogin, fm).status
		})
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st == http.StatusSeeOther {
			t.Fatal("a wrong password logged in")
		}
	}
	if got := b.login(b.authorize(codeRequest()), "demo", "demo-pw"); got.status == http.StatusSeeOther {
		t.Fatalf("after %d wrong passwords in a burst, the right one logged in: the burst was not counted", n)
	}
}

// An id_token_hint naming another user than the browser's session asks
// for that user (OpenID Connect Core §3.1.2.1): prompt=none answers
// login_required, not a code for the session's user (a relying party's
// silent renewal on a shared browser would otherwise switch user), and
// without prompt=none the login page is shown. A hint of the session's
// own user is answered at once; a hint that is not one of our ID tokens,
// or was issued to another client, is refused.
func TestPromptNoneHonoursIDTokenHint(t *testing.T) {
	f := newFixture(t, withBrowserClients)
	b, code := loggedIn(t, f)
	tok := f.exchange("spa", code, spaRedirect, verifier)
	idToken := tok.str("id_token")
	if tok.status != 200 || idToken == "" {
		t.Fatalf("exchange: %d %s", tok.status, tok.raw)
	}
	// Another user signs in in the same browser.
	v := b.login(b.authorize(codeRequest("prompt", "login")), "other", "other-pw").result(t, false)
	if v.Get("code") == "" {
		t.Fatalf("other's login: %v", v)
	}
	otherID := f.exchange("spa", v.Get("code"), spaRedirect, verifier).str("id_token")
	// spa renews demo's login silently.
	v = b.authorize(codeRequest("prompt", "none", "id_token_hint", idToken)).result(t, false)
	if v.Get("code") != "" || v.Get("error") != "login_required" {
		t.Fatalf("prompt=none with demo's id_token_hint in other's session: %v, want error login_required", v)
	}
	p := b.authorize(codeRequest("id_token_hint", idToken))
	if p.status != 200 || !strings.Contains(p.body, `name="password"`) {
		t.Fatalf("demo's id_token_hint in other's session without prompt=none: %d, want the login page", p.status)
	}
	// Signing in there as another user than the hint's is no answer to
	// it (Core §3.1.2.1); as the hint's user, it is.
	if v := b.login(p, "other", "other-pw").result(t, false); v.Get("code") != "" || v.Get("error") != "login_required" {
		t.Errorf("signed in as other on a login page for demo's hint: %v, want error login_required", v)
	}
	p = b.authorize(codeRequest("id_token_hint", idToken))
	if v := b.login(p, "demo", "demo-pw").result(t, false); v.Get("code") == "" {
		t.Errorf("signed in as demo on a login page for demo's hint: %v", v)
	}
	b.login(b.authorize(codeRequest("prompt", "login")), "other", "other-pw")
	if v := b.authorize(codeRequest("prompt", "none", "id_token_hint", otherID)).result(t, false); v.Get("code") == "" {
		t.Errorf("prompt=none with the session's own user's id_token_hint: %v", v)
	}
	// A hint that cannot be verified is refused, whatever its key id: one
	// forged with a made-up kid and another user's sub, sent with
	// prompt=none, must not get a code for the user signed in.
	// It failed when: a hint of an unknown key id was ignored (taken for a
	// key retired since), and the forged hint got demo's session a code.
	enc := base64.RawURLEncoding.EncodeToString
	forged := enc([]byte(`{"alg":"RS256","kid":"made-up","typ":"JWT"}`)) + "." +
		enc([]byte(`{"iss":"`+testIssuer+`","sub":"sub-other","aud":"spa"}`)) + "." + enc([]byte("signature"))
	if v := b.authorize(codeRequest("prompt", "none", "id_token_hint", forged)).result(t, false); v.Get("code") != "" || v.Get("error") != "invalid_request" {
		t.Errorf("prompt=none with a hint of an unknown key: %v, want invalid_request and no code", v)
	}
	for name, hint := range map[string]string{"not a token": "x.y.z", "another client's": webIDToken(t, f)} {
		if v := b.authorize(codeRequest("prompt", "none", "id_token_hint", hint)).result(t, false); v.Get("error") != "invalid_request" {
			t.Errorf("an id_token_hint %s: %v, want invalid_request", name, v)
		}
	}
}

// webIDToken is an ID token of other's, issued to web.
func webIDToken(t *testing.T, f *fixture) string {
	t.Helper()
	b := newBrowser(t, f)
	p := b.consent(b.login(b.authorize(webRequest("id_token")), "other", "other-pw"), "allow")
	idt := p.result(t, true).Get("id_token")
	if idt == "" {
		t.Fatalf("no ID token for web: %v", p.location)
	}
	return idt
}
