package identity

import (
	"encoding/base64"
	"strings"
	"testing"
)

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
