package identity

import (
	"encoding/base32"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/mfa"
)

// accountPage opens the account page.
func (b *browser) accountPage() page {
	b.t.Helper()
	return b.do(httptest.NewRequest(http.MethodGet, testIssuer+PathAccount, nil))
}

// accountPost posts one of the account page's forms: p's hidden fields,
// then kv.
func (b *browser) accountPost(p page, kv ...string) page {
	b.t.Helper()
	form := p.fields()
	for i := 0; i+1 < len(kv); i += 2 {
		form.Set(kv[i], kv[i+1])
	}
	return b.post(PathAccount, form)
}

var keyField = regexp.MustCompile(`<code id="totp-key">([A-Z2-7]+)</code>`)

// enrolledKey is the secret an enrolment page offers.
func enrolledKey(t *testing.T, p page) []byte {
	t.Helper()
	m := keyField.FindStringSubmatch(p.body)
	if m == nil || !strings.Contains(p.body, `<svg class="qr"`) {
		t.Fatalf("no enrolment offered: %d %s", p.status, p.body)
	}
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

var codeItem = regexp.MustCompile(`<li><code>([0-9A-Z-]+)</code></li>`)

func shownCodes(p page) []string {
	var out []string
	for _, m := range codeItem.FindAllStringSubmatch(p.body, -1) {
		out = append(out, m[1])
	}
	return out
}

// signedInAccount is a browser signed in as user on the account page.
func signedInAccount(t *testing.T, f *fixture, user, password string) (*browser, page) {
	t.Helper()
	b := newBrowser(t, f)
	p := b.accountPage()
	if !strings.Contains(p.body, `name="action" value="login"`) {
		t.Fatalf("no login form without a session: %d %s", p.status, p.body)
	}
	p = b.accountPost(p, "username", user, "password", password)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Account security") {
		t.Fatalf("account login: %d %s", p.status, p.body)
	}
	return b, p
}

// TestAccountEnrolTOTP: a user sets up an authenticator app on the
// account page: the password again (none: refused; wrong: refused), then
// a QR code and key; a wrong first code is refused, the right one enrols
// the secret, shows ten recovery codes once, and counts as the session's
// second factor. The new factor then passes the step-up; a second setup
// is refused while one exists; new recovery codes replace the old;
// removal (password again) ends the user's sessions and leaves the user
// without a factor, so Trading is dropped, not asked for.
func TestAccountEnrolTOTP(t *testing.T) {
	f, _ := stepUpFixture(t)
	b, p := signedInAccount(t, f, "novice", "demo-pw")
	if !strings.Contains(p.body, "Not set up") {
		t.Fatalf("novice has a factor: %s", p.body)
	}
	if res := b.accountPost(p, "action", "totp-begin"); res.status != http.StatusBadRequest || strings.Contains(res.body, "totp-key") {
		t.Fatalf("setup without the password: %d", res.status)
	}
	if res := b.accountPost(p, "action", "totp-begin", "password", "wrong"); res.status != http.StatusUnauthorized || strings.Contains(res.body, "totp-key") {
		t.Fatalf("setup with a wrong password: %d", res.status)
	}
	offer := b.accountPost(p, "action", "totp-begin", "password", "demo-pw")
	secret := enrolledKey(t, offer)
	// A second offer, as another tab would get: refused once the first
	// is confirmed (it would replace the app without a code of it).
	offer2 := b.accountPost(p, "action", "totp-begin", "password", "demo-pw")
	secret2 := enrolledKey(t, offer2)
	if !strings.Contains(html.UnescapeString(offer.body), "otpauth") && !strings.Contains(offer.body, "QR code") {
		t.Fatal("no QR code")
	}
	wrong := b.accountPost(offer, "code", mfa.Code(secret, mfa.Step(f.clock.Now())+3))
	if wrong.status != http.StatusUnauthorized || !strings.Contains(wrong.body, "totp-key") {
		t.Fatalf("a wrong first code: %d", wrong.status)
	}
	done := b.accountPost(wrong, "code", mfa.Code(secret, mfa.Step(f.clock.Now())))
	codes := shownCodes(done)
	if done.status != http.StatusOK || len(codes) != mfa.RecoveryCodes || !strings.Contains(done.body, "Recovery codes left: 10") {
		t.Fatalf("enrolment: %d, %d codes: %s", done.status, len(codes), done.body)
	}
	if res := b.accountPost(b.accountPage(), "action", "totp-confirm", "enrolment", offer2.fields().Get("enrolment"),
		"code", mfa.Code(secret2, mfa.Step(f.clock.Now()))); res.status != http.StatusConflict {
		t.Fatalf("a second offer confirmed over the app: %d", res.status)
	}
	if again := b.accountPage(); len(shownCodes(again)) != 0 {
		t.Fatal("recovery codes shown twice")
	}
	if res := b.accountPost(b.accountPage(), "action", "totp-begin", "password", "demo-pw"); res.status != http.StatusConflict {
		t.Fatalf("a second setup: %d", res.status)
	}

	// The new factor passes the step-up, on the next step.
	f.clock.Add(mfa.Period)
	sb := newBrowser(t, f)
	form := sb.login(sb.authorize(deskRequest("openid Service/Trading")), "novice", "demo-pw")
	f.redeem(t, sb.factor(form, mfa.Code(secret, mfa.Step(f.clock.Now()))))

	// New recovery codes: the old ones no longer pass.
	renewed := b.accountPost(b.accountPage(), "action", "recovery-codes", "password", "demo-pw")
	if fresh := shownCodes(renewed); len(fresh) != mfa.RecoveryCodes || fresh[0] == codes[0] {
		t.Fatalf("new recovery codes: %v", fresh)
	}
	sb = newBrowser(t, f)
	form = sb.login(sb.authorize(deskRequest("openid Service/Trading")), "novice", "demo-pw")
	if res := sb.factor(form, codes[0]); res.location != nil {
		t.Fatal("an old recovery code passed")
	}

	// Removal: the password again, then no factor.
	if res := b.accountPost(b.accountPage(), "action", "totp-remove", "password", "wrong"); res.status != http.StatusUnauthorized {
		t.Fatalf("removal with a wrong password: %d", res.status)
	}
	removed := b.accountPost(b.accountPage(), "action", "totp-remove", "password", "demo-pw")
	if !strings.Contains(removed.body, "signed out everywhere") {
		t.Fatalf("removal: %d %s", removed.status, removed.body)
	}
	if p := b.accountPage(); !strings.Contains(p.body, `name="action" value="login"`) {
		t.Fatalf("the session outlived the removal: %s", p.body)
	}
	sb = newBrowser(t, f)
	tok := f.redeem(t, sb.login(sb.authorize(deskRequest("openid Service/Market Service/Trading")), "novice", "demo-pw"))
	if strings.Contains(tok.str("scope"), "Service/Trading") {
		t.Fatal("Trading granted without a factor")
	}
}

// TestAccountRefusals: the account page's changes are refused from
// another site, without the session's anti-forgery token, and a sealed
// enrolment does not carry over to another session: an attacker cannot
// plant their secret in the victim's account, nor confirm the victim's.
func TestAccountRefusals(t *testing.T) {
	f, _ := stepUpFixture(t)
	victim, vp := signedInAccount(t, f, "novice", "demo-pw")
	if res := victim.post(PathAccount, withFields(vp, "action", "totp-begin", "password", "demo-pw"),
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); res.status != http.StatusForbidden {
		t.Errorf("cross-site change: %d", res.status)
	}
	noToken := withFields(vp, "action", "totp-begin", "password", "demo-pw")
	noToken.Del("csrf_token")
	if res := victim.post(PathAccount, noToken); res.status != http.StatusForbidden {
		t.Errorf("no anti-forgery token: %d", res.status)
	}
	// The attacker (another account) offers itself a secret, then posts
	// that sealed enrolment with the victim's session and token.
	attacker, ap := signedInAccount(t, f, "other", "other-pw")
	offer := attacker.accountPost(ap, "action", "totp-begin", "password", "other-pw")
	secret := enrolledKey(t, offer)
	planted := withFields(vp, "action", "totp-confirm", "enrolment", offer.fields().Get("enrolment"),
		"code", mfa.Code(secret, mfa.Step(f.clock.Now())))
	if res := victim.post(PathAccount, planted); res.status != http.StatusBadRequest || strings.Contains(res.body, "recovery-codes") {
		t.Fatalf("another session's enrolment confirmed: %d", res.status)
	}
	st, err := f.srv.Factors().Status(t.Context(), "sub-novice")
	if err != nil || st.TOTP {
		t.Fatalf("the victim got a factor: %+v %v", st, err)
	}
	tampered := withFields(offer, "code", mfa.Code(secret, mfa.Step(f.clock.Now())))
	sealed := []byte(tampered.Get("enrolment"))
	if sealed[20] == 'A' { // flip it, whatever it was
		sealed[20] = 'B'
	} else {
		sealed[20] = 'A'
	}
	tampered.Set("enrolment", string(sealed))
	if res := attacker.post(PathAccount, tampered); res.status != http.StatusBadRequest {
		t.Fatalf("a tampered enrolment: %d", res.status)
	}
}

// TestAccountNeedsSecondFactor: with the password alone (a session that
// passed no second factor), a user who has a factor can neither mint
// recovery codes, nor remove or replace the app, nor confirm a sealed
// offer; after a code of the app on the page, the same session can.
func TestAccountNeedsSecondFactor(t *testing.T) {
	f, trader := stepUpFixture(t)
	before, err := f.srv.Factors().NewRecoveryCodes(t.Context(), trader)
	if err != nil {
		t.Fatal(err)
	}
	b, p := signedInAccount(t, f, "trader", "demo-pw")
	if !strings.Contains(p.body, `value="verify-factor"`) || strings.Contains(p.body, `value="totp-remove"`) {
		t.Fatalf("a one-factor session is offered changes: %s", p.body)
	}
	for _, action := range []string{"recovery-codes", "totp-remove", "totp-begin", "totp-confirm"} {
		res := b.accountPost(p, "action", action, "password", "demo-pw", "code", currentCode(f, 0))
		if res.status != http.StatusForbidden || len(shownCodes(res)) != 0 || strings.Contains(res.body, "totp-key") {
			t.Fatalf("%s with the password alone: %d", action, res.status)
		}
	}
	st, err := f.srv.Factors().Status(t.Context(), trader.Subject)
	if err != nil || !st.TOTP || st.RecoveryCodes != len(before) {
		t.Fatalf("factors changed by the password alone: %+v %v", st, err)
	}
	if res := b.accountPost(p, "action", "verify-factor", "code", "000000"); res.status != http.StatusUnauthorized {
		t.Fatalf("a wrong code: %d", res.status)
	}
	verified := b.accountPost(p, "action", "verify-factor", "code", currentCode(f, 0))
	if !strings.Contains(verified.body, `value="totp-remove"`) {
		t.Fatalf("after the code: %d %s", verified.status, verified.body)
	}
	renewed := b.accountPost(verified, "action", "recovery-codes", "password", "demo-pw")
	if len(shownCodes(renewed)) != mfa.RecoveryCodes {
		t.Fatalf("new codes after the code: %d", renewed.status)
	}
}

// withFields is p's hidden fields, then kv.
func withFields(p page, kv ...string) url.Values {
	form := p.fields()
	for i := 0; i+1 < len(kv); i += 2 {
		form.Set(kv[i], kv[i+1])
	}
	return form
}
