package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// withDeviceClients adds the device flow's clients: tv (public) and box
// (confidential), both allowed the device_code grant.
func withDeviceClients(c *Config) {
	c.Clients = append(c.Clients,
		clients.Config{
			ID: "tv", Name: "Living Room TV", Public: true,
			GrantTypes:    []string{oauth.GrantDeviceCode, oauth.GrantRefreshToken},
			Scopes:        []string{"openid", "profile", "offline_access", "Service/Market", "Service/Trading"},
			DefaultScopes: []string{"openid", "Service/Market"},
		},
		clients.Config{
			ID: "box", SecretHashes: [][]byte{sha("box-secret")},
			GrantTypes: []string{oauth.GrantDeviceCode},
			Scopes:     []string{"openid", "Service/Market"},
		},
	)
}

func newDeviceFixture(t *testing.T) *fixture {
	return newFixture(t, withBrowserClients, withDeviceClients)
}

// deviceAuthorize posts to the device authorization endpoint.
func (f *fixture) deviceAuthorize(v url.Values, mods ...func(*http.Request)) response {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathDeviceAuthorize, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, m := range mods {
		m(req)
	}
	return f.do(req)
}

// startDevice is a new device authorization of tv for scope.
func (f *fixture) startDevice(scope string) response {
	f.t.Helper()
	res := f.deviceAuthorize(form("client_id", "tv", "scope", scope))
	if res.status != http.StatusOK {
		f.t.Fatalf("device authorization: %d %s", res.status, res.raw)
	}
	return res
}

// poll is a device access token request of clientID.
func (f *fixture) poll(clientID, deviceCode string, mods ...func(*http.Request)) response {
	f.t.Helper()
	return f.post(form("grant_type", oauth.GrantDeviceCode, "client_id", clientID, "device_code", deviceCode), mods...)
}

// pollRequest is a device access token request of clientID, for
// goroutines other than the test's own (f.serve).
func pollRequest(clientID, deviceCode string) *http.Request {
	body := form("grant_type", oauth.GrantDeviceCode, "client_id", clientID, "device_code", deviceCode).Encode()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathToken, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// deviceRecord is the stored authorization of a device code.
func (f *fixture) deviceRecord(deviceCode string) store.DeviceCode {
	f.t.Helper()
	d, err := f.st.(store.DeviceStore).DeviceCode(context.Background(), tokens.HashToken(deviceCode))
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// openVerification opens a verification URI in the browser.
func (b *browser) openVerification(uri string) page {
	b.t.Helper()
	return b.do(httptest.NewRequest(http.MethodGet, uri, nil))
}

// deviceLogin logs in on the verification page's login form p and follows
// the redirect back to the page.
func (b *browser) deviceLogin(p page, user, password string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `action="/connect/device"`) || !strings.Contains(p.body, `name="password"`) {
		b.t.Fatalf("not the device login form: %d %s", p.status, p.body)
	}
	form := p.fields()
	form.Set("username", user)
	form.Set("password", password)
	res := b.post(PathDeviceVerification, form)
	if res.status != http.StatusSeeOther || res.location == nil {
		b.t.Fatalf("login: %d %s", res.status, res.body)
	}
	return b.openVerification(testIssuer + res.location.String())
}

// decide answers the confirmation page p.
func (b *browser) decide(p page, decision string, headers ...string) page {
	b.t.Helper()
	if !strings.Contains(p.body, `value="decide"`) {
		b.t.Fatalf("not the confirmation page: %d %s", p.status, p.body)
	}
	form := p.fields()
	form.Set("decision", decision)
	return b.post(PathDeviceVerification, form, headers...)
}

// approvedBy has a browser logged in as demo confirm the device
// authorization res with decision, and returns the browser.
func approvedBy(t *testing.T, f *fixture, res response, decision string) *browser {
	t.Helper()
	b := newBrowser(t, f)
	confirm := b.deviceLogin(b.openVerification(res.str("verification_uri_complete")), "demo", "demo-pw")
	done := b.decide(confirm, decision)
	if done.status != http.StatusOK || !strings.Contains(done.body, `id="device-result"`) {
		t.Fatalf("decision %s: %d %s", decision, done.status, done.body)
	}
	return b
}

var userCodeShape = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// TestDeviceFlowApproved: the whole flow, RFC 8628 §3: pending until the
// user approves on the page, then tokens once.
func TestDeviceFlowApproved(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid profile offline_access Service/Market")
	dc, uc := res.str("device_code"), res.str("user_code")
	if !userCodeShape.MatchString(uc) || len(dc) < 40 || res.str("verification_uri") != testIssuer+PathDeviceVerification ||
		res.str("verification_uri_complete") != testIssuer+PathDeviceVerification+"?user_code="+uc ||
		res.num("expires_in") != 600 || res.num("interval") != 5 {
		t.Fatalf("device authorization response: %s", res.raw)
	}
	if cc := res.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("Cache-Control %q", cc)
	}
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrAuthorizationPending || p.status != http.StatusBadRequest {
		t.Fatalf("poll before approval: %d %s", p.status, p.raw)
	}
	b := newBrowser(t, f)
	login := b.openVerification(res.str("verification_uri_complete"))
	confirm := b.deviceLogin(login, "demo", "demo-pw")
	for _, want := range []string{"Living Room TV", uc, "Stay signed in", "Market", `value="allow"`, `value="deny"`} {
		if !strings.Contains(confirm.body, want) {
			t.Errorf("confirmation page lacks %q: %s", want, confirm.body)
		}
	}
	done := b.decide(confirm, "allow")
	if !strings.Contains(done.body, "Device connected") {
		t.Fatalf("after allow: %d %s", done.status, done.body)
	}
	f.clock.Add(5 * time.Second)
	tok := f.poll("tv", dc)
	if tok.status != http.StatusOK || tok.str("refresh_token") == "" || tok.str("id_token") == "" ||
		tok.str("scope") != "openid profile offline_access Service/Market" {
		t.Fatalf("poll after approval: %d %s", tok.status, tok.raw)
	}
	claims, _ := f.parseToken(tok.str("access_token"), "at+jwt")
	if claims["sub"] != "sub-demo" || claims["client_id"] != "tv" || claims["acr"] != oauth.ACRSingleFactor {
		t.Errorf("access token claims %v", claims)
	}
	// The refresh token works as any other.
	if r := f.refresh("tv", tok.str("refresh_token")); r.status != http.StatusOK {
		t.Errorf("refresh: %d %s", r.status, r.raw)
	}
	// Exchanged once: the next poll is refused and changes nothing.
	before := f.deviceRecord(dc)
	f.clock.Add(10 * time.Second)
	if again := f.poll("tv", dc); again.str("error") != oauth.ErrInvalidGrant {
		t.Fatalf("second exchange: %d %s", again.status, again.raw)
	}
	if after := f.deviceRecord(dc); !after.LastPolledAt.Equal(before.LastPolledAt) || after.AccessTokenID != before.AccessTokenID {
		t.Errorf("a refused exchange changed the record: %+v -> %+v", before, after)
	}
}

// TestDeviceFlowDenied: a denial is access_denied, and no token ever.
func TestDeviceFlowDenied(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("")
	approvedBy(t, f, res, "deny")
	if p := f.poll("tv", res.str("device_code")); p.str("error") != oauth.ErrAccessDenied {
		t.Fatalf("poll after denial: %d %s", p.status, p.raw)
	}
	if d := f.deviceRecord(res.str("device_code")); d.State != store.DeviceDenied || !d.UsedAt.IsZero() {
		t.Errorf("record after denial: %+v", d)
	}
}

// TestDeviceApprovalEndsWithUsersSessions: ending the user's sessions (a
// disable, a new password, a delete) denies the device authorizations the
// user approved and no device has exchanged yet, for good: once the
// subject's revocation is purged (it lasts as long as access tokens do, a
// device code may outlive it) a user enabled again still gets no token for
// an approval made before.
func TestDeviceApprovalEndsWithUsersSessions(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	approvedBy(t, f, res, "allow")
	now := f.clock.Now()
	if err := f.st.RevokeSubject(t.Context(), "sub-demo", now, now.Add(6*time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(7 * time.Minute)
	if _, err := f.st.DeleteExpired(t.Context(), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if p := f.poll("tv", res.str("device_code")); p.str("error") != oauth.ErrAccessDenied {
		t.Fatalf("poll of an approval made before the user's sessions ended: %d %s", p.status, p.raw)
	}
}

// TestDeviceAuthorizationRefusals: the endpoint's client and request
// checks, each answered in RFC 6749 form as at the token endpoint (401 with
// a challenge for failed Basic authentication, 400 otherwise).
func TestDeviceAuthorizationRefusals(t *testing.T) {
	f := newDeviceFixture(t)
	for _, tc := range []struct {
		name   string
		form   url.Values
		mods   []func(*http.Request)
		status int
		code   string
	}{
		{"unknown client", form("client_id", "nobody"), nil, http.StatusBadRequest, oauth.ErrInvalidClient},
		{"no client", form("scope", "openid"), nil, http.StatusBadRequest, oauth.ErrInvalidClient},
		{"client not allowed the grant", form("client_id", "app"), nil, http.StatusBadRequest, oauth.ErrUnauthorizedClient},
		{"scope not the client's", form("client_id", "tv", "scope", "Service/Admin"), nil, http.StatusBadRequest, oauth.ErrInvalidScope},
		{"confidential without secret", form("client_id", "box"), nil, http.StatusBadRequest, oauth.ErrInvalidClient},
		{"confidential wrong secret", url.Values{}, []func(*http.Request){basic("box", "nope")}, http.StatusUnauthorized, oauth.ErrInvalidClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.deviceAuthorize(tc.form, tc.mods...)
			if res.status != tc.status || res.str("error") != tc.code || res.str("device_code") != "" {
				t.Errorf("%d %s, want %d %s", res.status, res.raw, tc.status, tc.code)
			}
		})
	}
	if res := f.deviceAuthorize(form("scope", "openid"), basic("box", "box-secret")); res.status != http.StatusOK {
		t.Errorf("confidential client with its secret: %d %s", res.status, res.raw)
	}
	get := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathDeviceAuthorize, nil))
	if get.status != http.StatusMethodNotAllowed || get.str("error") != oauth.ErrInvalidRequest {
		t.Errorf("GET: %d %s", get.status, get.raw)
	}
}

// TestDevicePollHostile: polls that must be refused with the RFC 8628
// error and change nothing the next poll depends on.
func TestDevicePollHostile(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	dc := res.str("device_code")

	// Polled faster than the interval: slow_down, the interval grows by
	// 5 s (RFC 8628 §3.5), and the authorization stays pending.
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrAuthorizationPending {
		t.Fatalf("first poll: %s", p.raw)
	}
	// (A poll within a second of the interval is on time: jitter.)
	f.clock.Add(3 * time.Second)
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrSlowDown || p.status != http.StatusBadRequest {
		t.Fatalf("poll after 3s: %d %s", p.status, p.raw)
	}
	if d := f.deviceRecord(dc); d.Interval != 10*time.Second || d.State != store.DevicePending {
		t.Fatalf("after slow_down: interval %v state %s", d.Interval, d.State)
	}
	f.clock.Add(8 * time.Second)
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrSlowDown {
		t.Fatalf("poll 8s after a slow_down (interval now 10s): %s", p.raw)
	}
	f.clock.Add(15 * time.Second)
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrAuthorizationPending {
		t.Fatalf("poll after the grown interval: %s", p.raw)
	}

	// A client that keeps polling too fast grows the interval to
	// store.MaxPollInterval; past it, its polls are answered slow_down
	// from a read: the record is not written (its last poll stays), and a
	// poll the interval after the last recorded one is answered.
	for range 20 {
		f.clock.Add(time.Second)
		if p := f.poll("tv", dc); p.str("error") != oauth.ErrSlowDown {
			t.Fatalf("a fast poll: %s", p.raw)
		}
	}
	capped := f.deviceRecord(dc)
	if capped.Interval != store.MaxPollInterval {
		t.Fatalf("interval after 20 fast polls: %v, want %v", capped.Interval, store.MaxPollInterval)
	}
	f.clock.Add(time.Second)
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrSlowDown || p.str("error_description") != "polling too fast: wait the interval" {
		t.Fatalf("a fast poll at the most interval: %s", p.raw)
	}
	if d := f.deviceRecord(dc); !d.LastPolledAt.Equal(capped.LastPolledAt) || d.Interval != capped.Interval {
		t.Fatalf("a fast poll at the most interval wrote the record: last poll %v, was %v", d.LastPolledAt, capped.LastPolledAt)
	}
	f.clock.Add(capped.LastPolledAt.Add(store.MaxPollInterval).Sub(f.clock.Now()))
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrAuthorizationPending {
		t.Fatalf("a poll the most interval after the last recorded one: %s", p.raw)
	}

	// Another client's device code: refused, and its poll time untouched.
	before := f.deviceRecord(dc)
	f.clock.Add(time.Minute)
	if p := f.poll("box", dc, basic("box", "box-secret")); p.str("error") != oauth.ErrInvalidGrant {
		t.Errorf("another client's device code: %s", p.raw)
	}
	if after := f.deviceRecord(dc); !after.LastPolledAt.Equal(before.LastPolledAt) || after.Interval != before.Interval {
		t.Errorf("another client's poll changed the record")
	}
	for name, code := range map[string]string{"unknown": "not-a-device-code", "too long": strings.Repeat("a", 500)} {
		if p := f.poll("tv", code); p.str("error") != oauth.ErrInvalidGrant {
			t.Errorf("%s device code: %s", name, p.raw)
		}
	}
	if p := f.post(form("grant_type", oauth.GrantDeviceCode, "client_id", "tv")); p.str("error") != oauth.ErrInvalidRequest {
		t.Errorf("no device_code: %s", p.raw)
	}
	// The app client may not use the grant at all.
	if p := f.poll("app", dc); p.str("error") != oauth.ErrUnauthorizedClient {
		t.Errorf("client not allowed the grant: %s", p.raw)
	}

	// Past its lifetime: expired_token, and the page no longer takes it.
	f.clock.Add(10 * time.Minute)
	if p := f.poll("tv", dc); p.str("error") != oauth.ErrExpiredToken {
		t.Errorf("expired: %s", p.raw)
	}
	b := newBrowser(t, f)
	p := b.deviceLogin(b.openVerification(res.str("verification_uri_complete")), "demo", "demo-pw")
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "not valid") {
		t.Errorf("expired code on the page: %d %s", p.status, p.body)
	}
}

// TestDeviceExchangeRace: many exchanges of one approved device code at
// once, each allowed to poll: exactly one gets tokens.
func TestDeviceExchangeRace(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid offline_access")
	approvedBy(t, f, res, "allow")
	const n = 12
	out := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out[i] = f.serve(pollRequest("tv", res.str("device_code")))
		})
	}
	wg.Wait()
	won := 0
	for i, r := range out {
		switch {
		case r.err != nil:
			t.Errorf("exchange %d: %v", i, r.err)
		case r.status == http.StatusOK:
			won++
		case r.str("error") != oauth.ErrSlowDown && r.str("error") != oauth.ErrInvalidGrant:
			t.Errorf("exchange %d: %d %s", i, r.status, r.raw)
		}
	}
	if won != 1 {
		t.Fatalf("%d exchanges got tokens, want 1", won)
	}
}

// TestDeviceUserCodeEntry: the code is found whatever its case, dashes
// and spaces; a malformed one is refused without a lookup.
func TestDeviceUserCodeEntry(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	uc := res.str("user_code")
	b := newBrowser(t, f)
	enter := b.deviceLogin(b.openVerification(testIssuer+PathDeviceVerification), "demo", "demo-pw")
	if !strings.Contains(enter.body, `name="user_code"`) {
		t.Fatalf("no code form: %d %s", enter.status, enter.body)
	}
	typed := " " + strings.ToLower(uc[:2]) + " " + uc[2:4] + uc[5:] + " "
	v := enter.fields()
	v.Set("user_code", typed)
	confirm := b.post(PathDeviceVerification, v)
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, uc) || !strings.Contains(confirm.body, `value="decide"`) {
		t.Fatalf("typed %q: %d %s", typed, confirm.status, confirm.body)
	}
	// A good code is not counted against the limit (10): the user may
	// open the page again and again.
	for i := range 12 {
		if again := b.post(PathDeviceVerification, v); again.status != http.StatusOK {
			t.Fatalf("good code, entry %d: %d", i+2, again.status)
		}
	}
	v.Set("user_code", "AEIO-U123")
	if bad := b.post(PathDeviceVerification, v); bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "such as") {
		t.Errorf("malformed code: %d %s", bad.status, bad.body)
	}
}

// TestDeviceCrossSiteDecision: the approve form posted from another
// site, without the anti-forgery token, or with another session's, is
// refused, and the authorization stays pending.
func TestDeviceCrossSiteDecision(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	b := newBrowser(t, f)
	confirm := b.deviceLogin(b.openVerification(res.str("verification_uri_complete")), "demo", "demo-pw")
	mallory := newBrowser(t, f)
	malloryPage := mallory.deviceLogin(mallory.openVerification(testIssuer+PathDeviceVerification), "other", "other-pw")
	for _, tc := range []struct {
		name    string
		form    func(url.Values)
		headers []string
	}{
		{"Origin of another site", nil, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", ""}},
		{"Sec-Fetch-Site cross-site", nil, []string{"Origin", "", "Sec-Fetch-Site", "cross-site"}},
		{"Origin null", nil, []string{"Origin", "null", "Sec-Fetch-Site", ""}},
		{"no anti-forgery token", func(v url.Values) { v.Del("csrf_token") }, nil},
		{"another session's token", func(v url.Values) { v.Set("csrf_token", malloryPage.fields().Get("csrf_token")) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := confirm.fields()
			v.Set("decision", "allow")
			if tc.form != nil {
				tc.form(v)
			}
			p := b.post(PathDeviceVerification, v, tc.headers...)
			if p.status != http.StatusForbidden {
				t.Errorf("status %d: %s", p.status, p.body)
			}
			if d := f.deviceRecord(res.str("device_code")); d.State != store.DevicePending {
				t.Errorf("state %s after a refused post", d.State)
			}
		})
	}
	// The genuine post still works.
	if done := b.decide(confirm, "allow"); !strings.Contains(done.body, "Device connected") {
		t.Errorf("genuine approval: %d %s", done.status, done.body)
	}
	// And a second decision is refused.
	if again := b.decide(confirm, "deny"); again.status == http.StatusOK {
		t.Errorf("second decision: %d", again.status)
	}
	if d := f.deviceRecord(res.str("device_code")); d.State != store.DeviceApproved || d.Subject != "sub-demo" {
		t.Errorf("record %+v", d)
	}
}

func (r response) num(k string) float64 {
	n, _ := r.body[k].(float64)
	return n
}

// TestDeviceCrossSiteLinks: a link from another site to the verification
// page with a user code shows the code in the entry form without looking
// it up, so a page cannot spend the user's allowance of wrong codes; the
// user's own entry of the good code then works.
func TestDeviceCrossSiteLinks(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	b := newBrowser(t, f)
	b.deviceLogin(b.openVerification(testIssuer+PathDeviceVerification), "demo", "demo-pw")
	for i := range 15 {
		req := httptest.NewRequest(http.MethodGet, testIssuer+PathDeviceVerification+"?user_code=CCCC-"+guess(i), nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		p := b.do(req)
		if p.status != http.StatusOK || !strings.Contains(p.body, `name="user_code"`) || !strings.Contains(p.body, guess(i)) {
			t.Fatalf("cross-site link %d: %d %.300s", i, p.status, p.body)
		}
	}
	req := httptest.NewRequest(http.MethodGet, res.str("verification_uri_complete"), nil)
	req.Header.Set("Sec-Fetch-Site", "none") // the user's own navigation
	if p := b.do(req); p.status != http.StatusOK || !strings.Contains(p.body, `value="decide"`) {
		t.Fatalf("the good code after the cross-site links: %d %.300s", p.status, p.body)
	}
}

// Two users' browsers answer the same user code at once, many times each
// (demo allows, other allows too): exactly one answer is recorded, and
// the device gets the tokens of the user whose answer won.
func TestDeviceDecisionRace(t *testing.T) {
	f := newDeviceFixture(t)
	res := f.startDevice("openid")
	type tab struct {
		b    *browser
		form url.Values
		sub  string
	}
	var tabs []tab
	for _, u := range []struct{ name, pw, sub string }{{"demo", "demo-pw", "sub-demo"}, {"other", "other-pw", "sub-other"}} {
		b := newBrowser(t, f)
		p := b.deviceLogin(b.openVerification(res.str("verification_uri_complete")), u.name, u.pw)
		if !strings.Contains(p.body, `value="decide"`) {
			t.Fatalf("%s: no confirmation page: %d %s", u.name, p.status, p.body)
		}
		fm := p.fields()
		fm.Set("decision", "allow")
		tabs = append(tabs, tab{b, fm, u.sub})
	}
	const perTab = 6
	type result struct {
		sub    string
		status int
		body   string
	}
	out := make(chan result, perTab*len(tabs))
	var wg sync.WaitGroup
	for i := 0; i < perTab; i++ {
		for _, tb := range tabs {
			wg.Go(func() {
				p := tb.b.post(PathDeviceVerification, tb.form)
				out <- result{tb.sub, p.status, p.body}
			})
		}
	}
	wg.Wait()
	close(out)
	winner, won := "", 0
	for r := range out {
		if r.status == http.StatusOK && strings.Contains(r.body, "Device connected") {
			won++
			winner = r.sub
		}
	}
	if won != 1 {
		t.Fatalf("%d answers recorded, want 1", won)
	}
	tok := f.poll("tv", res.str("device_code"))
	if tok.status != 200 {
		t.Fatalf("poll: %d %s", tok.status, tok.raw)
	}
	if claims, _ := f.parseToken(tok.str("id_token"), "JWT"); claims["sub"] != winner {
		t.Fatalf("the device got %v's tokens, but %s's answer won", claims["sub"], winner)
	}
}
