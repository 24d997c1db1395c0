package identity

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/keys"
	"github.com/gatehouse/gatehouse/identity/mfa"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/users"
)

// The second-factor fixture: Service/Trading needs a second factor; the
// public client desk may ask for it through the code flow; trader holds
// it and has a TOTP factor (traderSecret), novice holds it and has none.
var traderSecret = []byte("12345678901234567890") // RFC 6238's test secret

func withStepUp(c *Config) {
	withBrowserClients(c)
	c.SecondFactorScopes = []string{"Service/Trading"}
	c.Clients = append(c.Clients,
		clients.Config{
			ID: "desk", Public: true,
			GrantTypes:   []string{oauth.GrantAuthorizationCode, oauth.GrantRefreshToken, oauth.GrantPassword},
			Scopes:       []string{"openid", "offline_access", "Service/Market", "Service/Trading"},
			RedirectURIs: []string{spaRedirect},
		},
		clients.Config{
			ID: "robot", SecretHashes: [][]byte{sha("robot-secret")},
			GrantTypes: []string{oauth.GrantClientCredentials},
			Scopes:     []string{"Service/Market", "Service/Trading"},
		},
	)
}

// stepUpFixture is a fixture withStepUp, trader's factor enrolled at the
// fixture's clock (its step used), and the clock moved on a step.
func stepUpFixture(t *testing.T, mutate ...func(*Config)) (*fixture, store.User) {
	t.Helper()
	f := newFixture(t, append([]func(*Config){withStepUp}, mutate...)...)
	dh, _ := passwordHashes(t)
	seed := []store.User{
		{Username: "trader", Subject: "sub-trader", PasswordHash: dh,
			Scopes: []string{"openid", "offline_access", "Service/Market", "Service/Trading"}},
		{Username: "novice", Subject: "sub-novice", PasswordHash: dh,
			Scopes: []string{"openid", "offline_access", "Service/Market", "Service/Trading"}},
	}
	if _, err := users.Seed(t.Context(), f.st, seed, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	trader, err := f.st.User(t.Context(), "trader")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Factors().ConfirmTOTP(t.Context(), trader, traderSecret, mfa.Code(traderSecret, mfa.Step(f.clock.Now())), "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(mfa.Period)
	return f, trader
}

// deskRequest asks desk for a code with scope.
func deskRequest(scope string, extra ...string) url.Values {
	return codeRequest(append([]string{"client_id", "desk", "scope", scope}, extra...)...)
}

// currentCode is trader's code at the fixture's clock, steps ahead.
func currentCode(f *fixture, steps int64) string {
	return mfa.Code(traderSecret, mfa.Step(f.clock.Now())+steps)
}

// factorForm submits code on the second-factor form of p.
func (b *browser) factor(p page, code string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `action="/connect/login/factor"`) {
		b.t.Fatalf("not the second-factor form: %d %s", p.status, p.body)
	}
	form := p.fields()
	form.Set("code", code)
	return b.post(PathFactor, form)
}

// redeem exchanges the code of a redirect for desk's tokens.
func (f *fixture) redeem(t *testing.T, p page) response {
	t.Helper()
	code := p.result(t, false).Get("code")
	if code == "" {
		t.Fatalf("no code: %d %v %s", p.status, p.location, p.body)
	}
	res := f.exchange("desk", code, spaRedirect, verifier)
	if res.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", res.status, res.raw)
	}
	return res
}

func scopeOf(res response) []string { return strings.Fields(res.str("scope")) }

// wantAuthentication checks a token's acr and amr.
func wantAuthentication(t *testing.T, f *fixture, tok, typ, acr string, amr ...string) {
	t.Helper()
	claims, _ := f.parseToken(tok, typ)
	var got []string
	if l, ok := claims["amr"].([]any); ok {
		for _, m := range l {
			got = append(got, m.(string))
		}
	}
	if claims["acr"] != acr || !slices.Equal(got, amr) {
		t.Errorf("%s: acr %v amr %v, want %s %v", typ, claims["acr"], got, acr, amr)
	}
	if _, ok := claims["auth_time"]; !ok {
		t.Errorf("%s has no auth_time", typ)
	}
}

// TestStepUpTOTP: a request for Service/Trading from a password-only
// session asks for a code; a wrong code, a code two steps away and no
// code are refused on the form; the current one (and one a step either
// side) passes, elevates the session under a new cookie, and the tokens
// carry Trading with acr mfa and amr pwd otp mfa, the access token
// included. The same session then asks for no second code. It failed when
// needsStepUp ignored the scopes (no form: Trading was dropped) and when
// Elevate kept the cookie secret.
func TestStepUpTOTP(t *testing.T) {
	for _, skew := range []int64{-1, 0, 1} {
		t.Run("skew"+string(rune('1'+skew)), func(t *testing.T) {
			f, _ := stepUpFixture(t)
			b := newBrowser(t, f)
			p := b.login(b.authorize(deskRequest("openid offline_access Service/Market Service/Trading")), "trader", "demo-pw")
			if p.status != http.StatusOK || !strings.Contains(p.body, "Second factor") {
				t.Fatalf("no second-factor form after the password: %d %s", p.status, p.body)
			}
			before := b.sessionCookie().Value
			for _, bad := range []string{"", "000000", currentCode(f, 2), currentCode(f, -2), "12345", "abcdef"} {
				res := b.factor(p, bad)
				if res.location != nil || res.status == http.StatusOK {
					t.Fatalf("code %q accepted: %d %v", bad, res.status, res.location)
				}
				p = res
			}
			// Five failures locked the pair: past the lockout, a new form
			// of the same session (it was not elevated).
			f.clock.Add(16 * time.Minute)
			p = b.authorize(deskRequest("openid offline_access Service/Market Service/Trading"))
			if !strings.Contains(p.body, "Second factor") {
				t.Fatalf("session lost its form: %d %s", p.status, p.body)
			}
			res := b.factor(p, currentCode(f, skew))
			tok := f.redeem(t, res)
			if !slices.Contains(scopeOf(tok), "Service/Trading") {
				t.Fatalf("scope %q lacks Service/Trading", tok.str("scope"))
			}
			if after := b.sessionCookie().Value; after == before {
				t.Error("the session kept its cookie secret across the step-up")
			}
			wantAuthentication(t, f, tok.str("access_token"), oauth.TypeAccessToken, oauth.ACRMultiFactor, "pwd", "otp", "mfa")
			wantAuthentication(t, f, tok.str("id_token"), oauth.TypeIDToken, oauth.ACRMultiFactor, "pwd", "otp", "mfa")
			// The elevated session asks for no second code.
			again := b.authorize(deskRequest("openid Service/Trading"))
			if again.location == nil || again.result(t, false).Get("code") == "" {
				t.Fatalf("elevated session asked again: %d %s", again.status, again.body)
			}
			// Its refresh keeps Trading.
			ref := f.refresh("desk", tok.str("refresh_token"))
			if ref.status != http.StatusOK || !slices.Contains(scopeOf(ref), "Service/Trading") {
				t.Fatalf("refresh of a two-factor family: %d %s", ref.status, ref.raw)
			}
			wantAuthentication(t, f, ref.str("access_token"), oauth.TypeAccessToken, oauth.ACRMultiFactor, "pwd", "otp", "mfa")
		})
	}
}

// TestStepUpCodeOnce: a code is accepted once, on every instance sharing
// the store: a second browser, on a second server, is refused the code
// the first one used, and so are earlier steps' codes; the next step's
// code passes. CheckTOTP's refusal of a step at or below the last one
// and the store's compare-and-set each refuse a replay one after the
// other (it failed with both removed); the concurrent test below needs
// the compare-and-set.
func TestStepUpCodeOnce(t *testing.T) {
	f, _ := stepUpFixture(t)
	other, err := NewServer(t.Context(), f.cfg, f.st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	g := &fixture{t: t, srv: other, st: f.st, clock: f.clock, cfg: f.cfg, sleep: noSleep}

	code := currentCode(f, 0)
	a, b := newBrowser(t, f), newBrowser(t, g)
	pa := a.login(a.authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	pb := b.login(b.authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	f.redeem(t, a.factor(pa, code))
	if res := b.factor(pb, code); res.location != nil || res.status != http.StatusUnauthorized {
		t.Fatalf("the used code passed on the other instance: %d %v", res.status, res.location)
	}
	if res := b.factor(pb, currentCode(f, -1)); res.location != nil {
		t.Fatalf("an earlier step's code passed: %d", res.status)
	}
	f.clock.Add(mfa.Period)
	g.redeem(t, b.factor(pb, currentCode(f, 0)))
}

// TestStepUpCodeOnceConcurrent: one code sent by many browsers at once,
// on two instances, passes once.
func TestStepUpCodeOnceConcurrent(t *testing.T) {
	f, _ := stepUpFixture(t, func(c *Config) { c.Lockout.MaxFailures = -1 })
	other, err := NewServer(t.Context(), f.cfg, f.st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	g := &fixture{t: t, srv: other, st: f.st, clock: f.clock, cfg: f.cfg, sleep: noSleep}
	const n = 16
	browsers, pages := make([]*browser, n), make([]page, n)
	for i := range n {
		fx := f
		if i%2 == 1 {
			fx = g
		}
		browsers[i] = newBrowser(t, fx)
		pages[i] = browsers[i].login(browsers[i].authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	}
	code := currentCode(f, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for i := range n {
		wg.Go(func() {
			form := pages[i].fields()
			form.Set("code", code)
			req := httptestPost(PathFactor, form)
			res := browsers[i].send(req, func(*http.Cookie) bool { return true })
			if res.location != nil {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if passed != 1 {
		t.Fatalf("one code passed %d times", passed)
	}
}

// httptestPost is a same-origin form post of the issuer's pages.
func httptestPost(path string, form url.Values) *http.Request {
	req := httptest.NewRequest(http.MethodPost, testIssuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", testIssuer)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return req
}

// TestStepUpRecoveryCode: a recovery code stands in for the app's code
// once; the second use is refused, and the other codes still work.
func TestStepUpRecoveryCode(t *testing.T) {
	f, trader := stepUpFixture(t)
	codes, err := f.srv.Factors().NewRecoveryCodes(t.Context(), trader)
	if err != nil {
		t.Fatal(err)
	}
	signIn := func() (*browser, page) {
		b := newBrowser(t, f)
		return b, b.login(b.authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	}
	b, p := signIn()
	tok := f.redeem(t, b.factor(p, strings.ToLower(codes[0])))
	wantAuthentication(t, f, tok.str("access_token"), oauth.TypeAccessToken, oauth.ACRMultiFactor, "pwd", "otp", "mfa")
	b, p = signIn()
	if res := b.factor(p, codes[0]); res.location != nil || res.status != http.StatusUnauthorized {
		t.Fatalf("a spent recovery code passed: %d", res.status)
	}
	f.redeem(t, b.factor(p, codes[1]))
	st, err := f.srv.Factors().Status(t.Context(), trader.Subject)
	if err != nil || st.RecoveryCodes != len(codes)-2 {
		t.Fatalf("recovery codes left %d (%v), want %d", st.RecoveryCodes, err, len(codes)-2)
	}
}

// TestStepUpWithoutFactor: a user who holds Trading and has no factor
// gets the other scopes, single-factor; prompt=none from a password
// session of a user with a factor is interaction_required; a request for
// Trading alone by a user without a factor is invalid_scope.
func TestStepUpWithoutFactor(t *testing.T) {
	f, _ := stepUpFixture(t)
	b := newBrowser(t, f)
	tok := f.redeem(t, b.login(b.authorize(deskRequest("openid Service/Market Service/Trading")), "novice", "demo-pw"))
	if got := scopeOf(tok); slices.Contains(got, "Service/Trading") || !slices.Contains(got, "Service/Market") {
		t.Fatalf("novice got %v", got)
	}
	wantAuthentication(t, f, tok.str("access_token"), oauth.TypeAccessToken, oauth.ACRSingleFactor, "pwd")
	if v := b.authorize(deskRequest("Service/Trading")).result(t, false); v.Get("error") != oauth.ErrInvalidScope {
		t.Fatalf("Trading alone without a factor: %v", v)
	}

	tb := newBrowser(t, f)
	tb.login(tb.authorize(deskRequest("openid Service/Market")), "trader", "demo-pw") // Market alone: no form
	v := tb.authorize(deskRequest("openid Service/Trading", "prompt", "none")).result(t, false)
	if v.Get("error") != oauth.ErrInteractionRequired {
		t.Fatalf("prompt=none step-up: %v", v)
	}
	// acr_values asking for the multi-factor class steps up too.
	if p := tb.authorize(deskRequest("openid Service/Market", "acr_values", oauth.ACRMultiFactor)); !strings.Contains(p.body, "Second factor") {
		t.Fatalf("acr_values mfa did not step up: %d %v", p.status, p.location)
	}
}

// TestSecondFactorScopeGrants: the password grant (and the message
// gateway's AuthOwner, which runs it) refuses Trading asked by name and
// drops it from its default scopes; a refresh family from a
// one-factor sign-in (made before Trading needed a second factor) loses
// Trading at its next refresh, and asking for it by name is refused;
// client credentials keep it.
func TestSecondFactorScopeGrants(t *testing.T) {
	f, _ := stepUpFixture(t)
	res := f.post(form("grant_type", "password", "client_id", "desk", "username", "trader", "password", "demo-pw",
		"scope", "Service/Market Service/Trading"))
	if res.status != http.StatusBadRequest || res.str("error") != oauth.ErrInvalidScope || !strings.Contains(res.str("error_description"), "second factor") {
		t.Fatalf("password grant asked Trading: %d %s", res.status, res.raw)
	}
	res = f.post(form("grant_type", "password", "client_id", "desk", "username", "trader", "password", "demo-pw"))
	if res.status != http.StatusOK || slices.Contains(scopeOf(res), "Service/Trading") {
		t.Fatalf("password grant default scopes: %d %s", res.status, res.raw)
	}
	wantAuthentication(t, f, res.str("access_token"), oauth.TypeAccessToken, oauth.ACRSingleFactor, "pwd")
	// The message gateway's AuthOwner runs the same grant.
	if _, perr := f.srv.PasswordGrant(t.Context(), "desk", "", "trader", "demo-pw", "Service/Trading", "192.0.2.1"); perr == nil ||
		perr.Code != oauth.ErrInvalidScope {
		t.Fatalf("AuthOwner asking Trading: %v", perr)
	}
	if owner, perr := f.srv.PasswordGrant(t.Context(), "desk", "", "trader", "demo-pw", "", "192.0.2.1"); perr != nil ||
		strings.Contains(owner.Scope, "Service/Trading") {
		t.Fatalf("AuthOwner with the default scopes: %+v %v", owner, perr)
	}

	robot := f.post(form("grant_type", "client_credentials", "scope", "Service/Trading"), basic("robot", "robot-secret"))
	if robot.status != http.StatusOK || !slices.Contains(scopeOf(robot), "Service/Trading") {
		t.Fatalf("client credentials: %d %s", robot.status, robot.raw)
	}
	claims, _ := f.parseToken(robot.str("access_token"), oauth.TypeAccessToken)
	if _, ok := claims["acr"]; ok {
		t.Errorf("a client_credentials token has acr %v", claims["acr"])
	}

	// A family from before the requirement.
	f.cfg.SecondFactorScopes = nil
	f.restart()
	old := f.post(form("grant_type", "password", "client_id", "desk", "username", "trader", "password", "demo-pw",
		"scope", "offline_access Service/Market Service/Trading"))
	if old.status != http.StatusOK || !slices.Contains(scopeOf(old), "Service/Trading") {
		t.Fatalf("before the requirement: %d %s", old.status, old.raw)
	}
	f.cfg.SecondFactorScopes = []string{"Service/Trading"}
	f.restart()
	byName := f.post(form("grant_type", "refresh_token", "client_id", "desk", "refresh_token", old.str("refresh_token"),
		"scope", "Service/Trading"))
	if byName.str("error") != oauth.ErrInvalidScope || !strings.Contains(byName.str("error_description"), "second factor") {
		t.Fatalf("refresh asking Trading by name: %d %s", byName.status, byName.raw)
	}
	ref := f.refresh("desk", old.str("refresh_token"))
	if ref.status != http.StatusOK || slices.Contains(scopeOf(ref), "Service/Trading") || !slices.Contains(scopeOf(ref), "Service/Market") {
		t.Fatalf("refresh of a one-factor family: %d %s", ref.status, ref.raw)
	}
}

// TestFactorBruteForce: parallel bursts of wrong codes are counted as
// password guesses are: each burst gets no more checks in flight than a
// source may have (the rest: busy), the (user, source) pair locks after
// MaxFailures, and then the right code is refused too, and so is the
// user's password from that source. No wrong code ever passes.
func TestFactorBruteForce(t *testing.T) {
	f, _ := stepUpFixture(t)
	const width, rounds = 12, 8
	browsers, pages := make([]*browser, width+1), make([]page, width+1)
	for i := range width + 1 {
		browsers[i] = newBrowser(t, f)
		pages[i] = browsers[i].login(browsers[i].authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	}
	var mu sync.Mutex
	checked, busy := 0, 0
	for round := 0; round < rounds && checked < users.DefaultMaxFailures; round++ {
		var wg sync.WaitGroup
		for i := range width {
			wg.Go(func() {
				form := pages[i].fields()
				form.Set("code", mfa.Code(traderSecret, mfa.Step(f.clock.Now())+int64(5+round*width+i)))
				res := browsers[i].send(httptestPost(PathFactor, form), func(*http.Cookie) bool { return true })
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.location != nil:
					t.Errorf("wrong code %d passed", i)
				case res.status == http.StatusServiceUnavailable:
					busy++
				case res.status == http.StatusUnauthorized:
					checked++
				default:
					t.Errorf("wrong code %d: %d", i, res.status)
				}
			})
		}
		wg.Wait()
	}
	if checked < users.DefaultMaxFailures {
		t.Fatalf("%d wrong codes checked in %d rounds (%d busy)", checked, rounds, busy)
	}
	if res := browsers[width].factor(pages[width], currentCode(f, 0)); res.location != nil {
		t.Fatal("the right code passed on a locked pair")
	}
	if res := f.post(form("grant_type", "password", "client_id", "desk", "username", "trader", "password", "demo-pw")); res.status == http.StatusOK {
		t.Fatal("the password passed on a pair locked by wrong codes")
	}
}

// TestTOTPSecretSealed: with a key encryption key the stored secret is
// sealed, and bound to its user: copied to another user's row it does
// not open.
func TestTOTPSecretSealed(t *testing.T) {
	kek := bytes.Repeat([]byte{7}, keys.EncryptionKeySize)
	f, trader := stepUpFixture(t, func(c *Config) { c.Keys.EncryptionKey = kek })
	stored, err := f.st.TOTP(t.Context(), trader.Subject)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored.Secret, traderSecret) || !bytes.HasPrefix(stored.Secret, []byte("gatehouse-kek-v1:")) {
		t.Fatalf("the TOTP secret is stored in the clear: %q", stored.Secret)
	}
	novice, err := f.st.User(t.Context(), "novice")
	if err != nil {
		t.Fatal(err)
	}
	stored.Subject = novice.Subject
	if err := f.st.PutTOTP(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Factors().CheckTOTP(t.Context(), novice, currentCode(f, 0), "192.0.2.9"); err == nil || strings.Contains(err.Error(), "credentials") {
		t.Fatalf("a secret copied to another user opened: %v", err)
	}
}

// TestFactorFormRefusals: the second-factor form is refused, changing
// nothing and counting nothing, when posted from another site, without
// the session's anti-forgery token, or by another browser (its own
// session, a form of another session: refused by the token's binding to
// the session and by the sealed session id, either alone; it failed
// with both removed).
func TestFactorFormRefusals(t *testing.T) {
	f, _ := stepUpFixture(t)
	victim, attacker := newBrowser(t, f), newBrowser(t, f)
	vp := victim.login(victim.authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	ap := attacker.login(attacker.authorize(deskRequest("openid Service/Trading")), "trader", "demo-pw")
	code := currentCode(f, 0)
	withCode := func(p page) url.Values { v := p.fields(); v.Set("code", code); return v }

	// From another site, even with every cookie (as a browser would send
	// SameSite=None ones): the origin alone refuses it.
	if res := victim.post(PathFactor, withCode(vp), "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); res.status != http.StatusForbidden {
		t.Errorf("cross-site post: %d", res.status)
	}
	noToken := withCode(vp)
	noToken.Del("csrf_token")
	if res := victim.post(PathFactor, noToken); res.status != http.StatusForbidden {
		t.Errorf("no anti-forgery token: %d", res.status)
	}
	// The attacker's browser posts the victim's form (its request and
	// token) with the attacker's own session.
	if res := attacker.post(PathFactor, withCode(vp)); res.status != http.StatusForbidden || res.location != nil {
		t.Errorf("another session's form: %d %v", res.status, res.location)
	}
	// Nothing was counted or used: the code still passes, once.
	f.redeem(t, victim.factor(vp, code))
	if res := attacker.factor(ap, code); res.location != nil {
		t.Error("the code passed twice")
	}
}

// TestFactorLockAcrossSources: wrong codes from many sources, in a
// parallel burst, lock the user's second factor after FactorMaxFailures
// whatever their sources: the right code from a fresh address is then
// refused until the lockout ends. It failed without the factor's own
// counter (each source's pair saw one failure).
func TestFactorLockAcrossSources(t *testing.T) {
	f, trader := stepUpFixture(t)
	const n = 3 * users.FactorMaxFailures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wrong := mfa.Code(traderSecret, mfa.Step(f.clock.Now())+int64(5+i))
			source := "2001:db8:" + strconv.Itoa(i) + "::1" // a /64 each
			if err := f.srv.Factors().CheckTOTP(t.Context(), trader, wrong, source); err == nil {
				t.Errorf("wrong code %d passed", i)
			}
		})
	}
	wg.Wait()
	if err := f.srv.Factors().CheckTOTP(t.Context(), trader, currentCode(f, 0), "203.0.113.7"); !errors.Is(err, users.ErrBadCredentials) {
		t.Fatalf("the right code on a locked factor: %v", err)
	}
	f.clock.Add(16 * time.Minute)
	if err := f.srv.Factors().CheckTOTP(t.Context(), trader, currentCode(f, 0), "203.0.113.7"); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
}

// TestStepUpPasskeyOff: on a server that cannot check passkeys (its
// issuer is plain http on a host other than localhost), a user whose
// only factor is a passkey is not sent to a step-up they cannot pass:
// they get the other scopes. It failed when Status.Any counted passkeys
// whether or not the server could check them.
func TestStepUpPasskeyOff(t *testing.T) {
	f, _ := stepUpFixture(t)
	if f.srv.Factors().PasskeysOff() == "" {
		t.Fatal("passkeys are on with the fixture's issuer")
	}
	if err := f.st.AddPasskey(t.Context(), store.Passkey{ID: []byte("novice-key"), Subject: "sub-novice", Name: "laptop",
		PublicKey: []byte{0xa5}, Created: f.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f)
	tok := f.redeem(t, b.login(b.authorize(deskRequest("openid Service/Market Service/Trading")), "novice", "demo-pw"))
	if strings.Contains(tok.str("scope"), "Service/Trading") || !strings.Contains(tok.str("scope"), "Service/Market") {
		t.Fatalf("scope %q", tok.str("scope"))
	}
}
