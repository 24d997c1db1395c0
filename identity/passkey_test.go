package identity

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/factors/passkeytest"
	"github.com/gatehouse/gatehouse/identity/store"
)

// pkIssuer is the passkey tests' issuer: WebAuthn needs a host name, and
// over http it must be localhost (testIssuer's issuer.test turns
// passkeys off, so the other tests see no passkey forms).
const pkIssuer = "http://localhost"

// pkBrowser is a browser of pkIssuer's pages, with a software
// authenticator.
type pkBrowser struct {
	*browser
	auth *passkeytest.Authenticator
}

// passkeyFixture is stepUpFixture at pkIssuer: trader has a TOTP factor,
// novice none.
func passkeyFixture(t *testing.T) (*fixture, store.User, store.User) {
	t.Helper()
	f, trader := stepUpFixture(t, func(c *Config) { c.Issuer = pkIssuer })
	novice, err := f.st.User(t.Context(), "novice")
	if err != nil {
		t.Fatal(err)
	}
	if off := f.srv.Factors().PasskeysOff(); off != "" {
		t.Fatalf("passkeys are off: %s", off)
	}
	return f, trader, novice
}

func newPKBrowser(t *testing.T, f *fixture) *pkBrowser {
	return &pkBrowser{browser: newBrowser(t, f), auth: &passkeytest.Authenticator{Origin: pkIssuer}}
}

func (b *pkBrowser) get(path string) page {
	b.t.Helper()
	return b.do(httptest.NewRequest(http.MethodGet, pkIssuer+path, nil))
}

// post posts form to path as a page of pkIssuer does.
func (b *pkBrowser) post(path string, form url.Values) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, pkIssuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", pkIssuer)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// only is the hidden fields of p named names, with kv set.
func only(p page, names []string, kv ...string) url.Values {
	all, v := p.fields(), url.Values{}
	for _, n := range names {
		if x := all.Get(n); x != "" {
			v.Set(n, x)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// password submits the login form of p with a password (not its
// passkey form).
func (b *pkBrowser) password(p page, user, password string) page {
	b.t.Helper()
	return b.post(PathLogin, only(p, []string{"csrf_token", "request"}, "username", user, "password", password))
}

var passkeyOptions = regexp.MustCompile(`<script type="application/json" id="passkey-options">([^<]*)</script>`)

// ceremony is the passkey options and state of p's passkey form.
func ceremony(t *testing.T, p page, stateField string) ([]byte, string) {
	t.Helper()
	m := passkeyOptions.FindStringSubmatch(p.body)
	state := p.fields().Get(stateField)
	if m == nil || state == "" || !strings.Contains(p.body, `<script nonce=`) ||
		!strings.Contains(p.header.Get("Content-Security-Policy"), "script-src 'nonce-") {
		t.Fatalf("no passkey ceremony on the page: %d %s", p.status, p.body)
	}
	var check map[string]any
	if err := json.Unmarshal([]byte(m[1]), &check); err != nil {
		t.Fatalf("passkey options: %v: %s", err, m[1])
	}
	return []byte(m[1]), state
}

// usePasskey answers the passkey form of p (the login page or the
// second-factor form, posting to path) with cred.
func (b *pkBrowser) usePasskey(p page, path string, cred *passkeytest.Credential, o passkeytest.Options) page {
	b.t.Helper()
	options, state := ceremony(b.t, p, "passkey_state")
	response := b.auth.Get(b.t, options, cred, o)
	return b.post(path, only(p, []string{"csrf_token", "request"}, "passkey_state", state, "response", string(response)))
}

// verifyPasskey answers the account page's passkey check with cred.
func (b *pkBrowser) verifyPasskey(p page, cred *passkeytest.Credential, o passkeytest.Options) page {
	b.t.Helper()
	options, state := ceremony(b.t, p, "passkey_state")
	return b.post(PathAccount, form("csrf_token", p.fields().Get("csrf_token"), "action", "verify-passkey",
		"passkey_state", state, "response", string(b.auth.Get(b.t, options, cred, o))))
}

// registered is a passkey of user, registered directly.
func registered(t *testing.T, f *fixture, user store.User, o passkeytest.Options) *passkeytest.Credential {
	t.Helper()
	options, state, err := f.srv.Factors().BeginPasskeyRegistration(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	cred, response := (&passkeytest.Authenticator{Origin: pkIssuer}).Create(t, options, o)
	if _, err := f.srv.Factors().FinishPasskeyRegistration(t.Context(), user, state, response, "test"); err != nil {
		t.Fatal(err)
	}
	return cred
}

// idTokenAuth is the acr and amr of the ID token of res (read, not
// verified: the token tests verify signatures).
func idTokenAuth(t *testing.T, res response) (string, []string) {
	t.Helper()
	parts := strings.Split(res.str("id_token"), ".")
	if len(parts) != 3 {
		t.Fatalf("no ID token: %s", res.raw)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		ACR string   `json:"acr"`
		AMR []string `json:"amr"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.ACR, claims.AMR
}

const tradingScopes = "openid offline_access Service/Market Service/Trading"

// TestPasskeyStepUp: after a password, a user whose only factor is a
// passkey is offered the passkey (no code form); it passes the step-up
// (amr pwd hwk mfa), and another user's passkey is refused on the form.
// A user with a TOTP factor only is offered the code form only. It
// failed when ServeFactor elevated the session with "otp" whatever the
// factor (the amr said otp).
func TestPasskeyStepUp(t *testing.T) {
	f, trader, novice := passkeyFixture(t)
	mine := registered(t, f, novice, passkeytest.Options{})
	theirs := registered(t, f, trader, passkeytest.Options{UV: true})

	b := newPKBrowser(t, f)
	p := b.password(b.get(PathAuthorize+"?"+deskRequest(tradingScopes).Encode()), "novice", "demo-pw")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Use a passkey") || strings.Contains(p.body, `name="code"`) {
		t.Fatalf("no passkey offered on the second-factor form: %d %s", p.status, p.body)
	}
	refused := b.usePasskey(p, PathFactor, theirs, passkeytest.Options{UV: true})
	if refused.status != http.StatusUnauthorized || !strings.Contains(refused.body, "That passkey was not accepted") {
		t.Fatalf("another user's passkey: %d %v %s", refused.status, refused.location, refused.body)
	}
	refused = b.usePasskey(refused, PathFactor, mine, passkeytest.Options{TamperSignature: true})
	if refused.status != http.StatusUnauthorized {
		t.Fatalf("a tampered signature: %d %v", refused.status, refused.location)
	}
	res := b.usePasskey(refused, PathFactor, mine, passkeytest.Options{})
	tok := f.redeem(t, res)
	if !slices.Contains(scopeOf(tok), "Service/Trading") {
		t.Fatalf("scope %q lacks Service/Trading", tok.str("scope"))
	}
	if acr, amr := idTokenAuth(t, tok); acr != "https://refeds.org/profile/mfa" || !slices.Equal(amr, []string{"pwd", "hwk", "mfa"}) {
		t.Errorf("after the passkey: acr %q amr %v", acr, amr)
	}

	// trader: a TOTP factor and a passkey: both offered.
	tb := newPKBrowser(t, f)
	p = tb.password(tb.get(PathAuthorize+"?"+deskRequest(tradingScopes).Encode()), "trader", "demo-pw")
	if !strings.Contains(p.body, "Use a passkey") || !strings.Contains(p.body, `name="code"`) {
		t.Fatalf("trader's form: %d %s", p.status, p.body)
	}
}

// TestPasskeySignIn: the login page offers a usernameless passkey; one
// with user verification signs in with two factors (Trading granted, no
// step-up, amr hwk user mfa); one without is one factor, and Trading asks
// for the step-up, which the same passkey with verification passes. A
// tampered signature and an unknown passkey are refused on the login
// page. It failed when the session started with amr pwd (Start, not
// StartWith).
func TestPasskeySignIn(t *testing.T) {
	f, _, novice := passkeyFixture(t)
	cred := registered(t, f, novice, passkeytest.Options{Counting: true})

	b := newPKBrowser(t, f)
	login := b.get(PathAuthorize + "?" + deskRequest(tradingScopes).Encode())
	if !strings.Contains(login.body, "Sign in with a passkey") {
		t.Fatalf("no passkey on the login page: %d %s", login.status, login.body)
	}
	refused := b.usePasskey(login, PathLogin, cred, passkeytest.Options{TamperSignature: true})
	if refused.status != http.StatusUnauthorized || !strings.Contains(refused.body, "That passkey was not accepted") {
		t.Fatalf("a tampered signature: %d %v %s", refused.status, refused.location, refused.body)
	}
	unknown := *cred
	unknown.ID = []byte("not registered")
	if p := b.usePasskey(refused, PathLogin, &unknown, passkeytest.Options{}); p.status != http.StatusUnauthorized {
		t.Fatalf("an unknown passkey: %d %v", p.status, p.location)
	}
	res := b.usePasskey(refused, PathLogin, cred, passkeytest.Options{UV: true})
	tok := f.redeem(t, res)
	if !slices.Contains(scopeOf(tok), "Service/Trading") {
		t.Fatalf("scope %q lacks Service/Trading", tok.str("scope"))
	}
	if acr, amr := idTokenAuth(t, tok); acr != "https://refeds.org/profile/mfa" || !slices.Equal(amr, []string{"hwk", "user", "mfa"}) {
		t.Errorf("a verified passkey: acr %q amr %v", acr, amr)
	}

	// Without user verification: one factor, so Trading asks for more.
	b = newPKBrowser(t, f)
	p := b.usePasskey(b.get(PathAuthorize+"?"+deskRequest(tradingScopes).Encode()), PathLogin, cred, passkeytest.Options{})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Use a passkey") {
		t.Fatalf("no step-up after a passkey without verification: %d %v %s", p.status, p.location, p.body)
	}
	tok = f.redeem(t, b.usePasskey(p, PathFactor, cred, passkeytest.Options{UV: true}))
	if acr, amr := idTokenAuth(t, tok); acr != "https://refeds.org/profile/mfa" || !slices.Equal(amr, []string{"hwk", "user", "mfa"}) {
		t.Errorf("after the step-up: acr %q amr %v", acr, amr)
	}
	// A one-factor passkey sign-in without Trading: no step-up.
	b = newPKBrowser(t, f)
	p = b.usePasskey(b.get(PathAuthorize+"?"+deskRequest("openid offline_access").Encode()), PathLogin, cred, passkeytest.Options{})
	if acr, amr := idTokenAuth(t, f.redeem(t, p)); acr != "https://refeds.org/profile/sfa" || !slices.Equal(amr, []string{"hwk"}) {
		t.Errorf("a passkey without verification: acr %q amr %v", acr, amr)
	}
}

var passkeyRow = regexp.MustCompile(`<input type="hidden" name="passkey" value="([^"]*)">\s*<label[^>]*>Name</label>\s*<input type="text"[^>]* name="name" value="([^"]*)"`)

// listed is the passkeys the account page lists: id to name.
func listed(p page) map[string]string {
	out := map[string]string{}
	for _, m := range passkeyRow.FindAllStringSubmatch(p.body, -1) {
		out[html.UnescapeString(m[1])] = html.UnescapeString(m[2])
	}
	return out
}

// TestPasskeyAccount: on the account page a user adds a passkey (the
// password first: none and a wrong one refused), names it, renames and
// removes it (the password again each time); a response the ceremony
// refuses adds nothing; once the user has a passkey, changes need a
// session that passed a factor, which the page's own passkey check gives
// (a tampered one refused); another user cannot remove it. It failed
// when passkey-begin skipped the password check.
func TestPasskeyAccount(t *testing.T) {
	f, _, _ := passkeyFixture(t)
	b := newPKBrowser(t, f)
	p := b.get(PathAccount)
	p = b.post(PathAccount, only(p, []string{"csrf_token", "action"}, "username", "novice", "password", "demo-pw"))
	if p.status != http.StatusOK || !strings.Contains(p.body, "Add a passkey") {
		t.Fatalf("account page: %d %s", p.status, p.body)
	}
	csrf := p.fields().Get("csrf_token")
	post := func(kv ...string) page {
		return b.post(PathAccount, form(append([]string{"csrf_token", csrf}, kv...)...))
	}

	if r := post("action", "passkey-begin", "name", "laptop"); r.status != http.StatusBadRequest || passkeyOptions.MatchString(r.body) {
		t.Fatalf("passkey-begin without the password: %d", r.status)
	}
	if r := post("action", "passkey-begin", "name", "laptop", "password", "wrong"); r.status != http.StatusUnauthorized || passkeyOptions.MatchString(r.body) {
		t.Fatalf("passkey-begin with a wrong password: %d", r.status)
	}
	add := func(name string, o passkeytest.Options) (page, *passkeytest.Credential) {
		r := post("action", "passkey-begin", "name", name, "password", "demo-pw")
		options, state := ceremony(t, r, "state")
		cred, response := b.auth.Create(t, options, o)
		return post("action", "passkey-finish", "state", state, "name", r.fields().Get("name"), "response", string(response)), cred
	}
	if r, _ := add("evil", passkeytest.Options{Origin: "http://evil.test"}); r.status != http.StatusBadRequest || len(listed(r)) != 0 {
		t.Fatalf("a response from another origin: %d %v", r.status, listed(r))
	}
	r, cred := add("laptop", passkeytest.Options{UV: true})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Your passkey was added.") {
		t.Fatalf("adding a passkey: %d %s", r.status, r.body)
	}
	// One passkey: further changes need a session that passed a factor.
	if r := post("action", "passkey-begin", "name", "key", "password", "demo-pw"); r.status != http.StatusForbidden || strings.Contains(r.body, `value="passkey-finish"`) {
		t.Fatalf("passkey-begin from a password session of a user with a passkey: %d", r.status)
	}
	r = b.verifyPasskey(r, cred, passkeytest.Options{TamperSignature: true})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("verifying with a tampered signature: %d", r.status)
	}
	if r = b.verifyPasskey(r, cred, passkeytest.Options{}); r.status != http.StatusOK || !strings.Contains(r.body, "with a second factor") {
		t.Fatalf("verifying with the passkey: %d %s", r.status, r.body)
	}
	csrf = r.fields().Get("csrf_token") // the elevated session's
	r, _ = add("key", passkeytest.Options{})
	keys := listed(r)
	var laptop, key string
	for id, name := range keys {
		switch name {
		case "laptop":
			laptop = id
		case "key":
			key = id
		}
	}
	if len(keys) != 2 || laptop == "" || key == "" || laptop != base64.RawURLEncoding.EncodeToString(cred.ID) {
		t.Fatalf("the passkeys listed: %v", keys)
	}

	if r := post("action", "passkey-rename", "passkey", laptop, "name", "work laptop"); r.status != http.StatusBadRequest {
		t.Errorf("a rename without the password: %d", r.status)
	}
	if r := post("action", "passkey-rename", "passkey", laptop, "name", "work laptop", "password", "demo-pw"); listed(r)[laptop] != "work laptop" {
		t.Errorf("after the rename: %d %v", r.status, listed(r))
	}
	if r := post("action", "passkey-rename", "passkey", laptop, "name", strings.Repeat("n", 65), "password", "demo-pw"); r.status != http.StatusBadRequest {
		t.Errorf("a long name: %d", r.status)
	}

	// Another user's session cannot remove it.
	other := newPKBrowser(t, f)
	op := other.get(PathAccount)
	op = other.post(PathAccount, only(op, []string{"csrf_token", "action"}, "username", "trader", "password", "demo-pw"))
	if r := other.post(PathAccount, form("csrf_token", op.fields().Get("csrf_token"), "action", "passkey-remove",
		"passkey", key, "password", "demo-pw")); r.status == http.StatusOK {
		t.Errorf("another user removing the passkey: %d", r.status)
	}
	if keys, _ := f.srv.Factors().Passkeys(t.Context(), "sub-novice"); len(keys) != 2 {
		t.Errorf("novice's passkeys after another user's removal: %d", len(keys))
	}
	// Removal ends novice's sessions, this one included.
	if r := post("action", "passkey-remove", "passkey", key, "password", "demo-pw"); r.status != http.StatusOK || !strings.Contains(r.body, "signed out everywhere") {
		t.Errorf("after the removal: %d %v", r.status, listed(r))
	}
	if keys, _ := f.srv.Factors().Passkeys(t.Context(), "sub-novice"); len(keys) != 1 {
		t.Errorf("novice's passkeys after the removal: %d", len(keys))
	}
	if p := b.get(PathAccount); !strings.Contains(p.body, `value="login"`) {
		t.Errorf("the session outlived the passkey's removal")
	}

	// The passkey added signs novice in.
	lb := newPKBrowser(t, f)
	res := lb.usePasskey(lb.get(PathAuthorize+"?"+deskRequest(tradingScopes).Encode()), PathLogin, cred, passkeytest.Options{UV: true})
	if acr, _ := idTokenAuth(t, f.redeem(t, res)); acr != "https://refeds.org/profile/mfa" {
		t.Errorf("the passkey added: acr %q", acr)
	}
}
