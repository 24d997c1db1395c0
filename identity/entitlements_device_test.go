package identity

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Market-data entries of the tests, as RFC 9396 authorization_details.
const (
	adASXQuotes = `[{"type":"market_data","venue":"ASX","feeds":["quotes"]}]`
	adASXBoth   = `[{"type":"market_data","venue":"ASX","feeds":["depth","quotes"]}]`
	adASXNZX    = `[{"type":"market_data","venue":"ASX","feeds":["quotes"]},{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`
	adNZXDepth  = `[{"type":"market_data","venue":"NZX","feeds":["depth"]}]`
)

// startDeviceAsking is a device authorization of tv for scope whose
// authorization_details is details ("" sends none).
func (f *fixture) startDeviceAsking(scope, details string) response {
	f.t.Helper()
	v := form("client_id", "tv", "scope", scope)
	if details != "" {
		v.Set("authorization_details", details)
	}
	res := f.deviceAuthorize(v)
	if res.status != http.StatusOK {
		f.t.Fatalf("device authorization: %d %s", res.status, res.raw)
	}
	return res
}

// pollAsking is a device access token request of tv whose
// authorization_details is details ("" sends none).
func (f *fixture) pollAsking(deviceCode, details string) response {
	f.t.Helper()
	v := form("grant_type", oauth.GrantDeviceCode, "client_id", "tv", "device_code", deviceCode)
	if details != "" {
		v.Set("authorization_details", details)
	}
	return f.post(v)
}

// confirmAndAllow has b, logged in as demo, open the verification page
// of res and allow it; it returns the confirmation and the result pages.
func confirmAndAllow(t *testing.T, b *browser, res response) (confirm, done page) {
	t.Helper()
	confirm = b.openVerification(res.str("verification_uri_complete"))
	done = b.decide(confirm, "allow")
	if done.status != http.StatusOK || !strings.Contains(done.body, `id="device-result"`) {
		t.Fatalf("allow: %d %s", done.status, done.body)
	}
	return confirm, done
}

// loggedInDevice is a browser logged in as demo on the verification page.
func loggedInDevice(t *testing.T, f *fixture) *browser {
	t.Helper()
	b := newBrowser(t, f)
	login := b.openVerification(testIssuer + PathDeviceVerification)
	if p := b.deviceLogin(login, "demo", "demo-pw"); p.status != http.StatusOK {
		t.Fatalf("login: %d %s", p.status, p.body)
	}
	return b
}

// The device flow narrows as the code flow does: the device
// authorization request's authorization_details (kept with the code)
// gives the pairs asked for if the user holds them all, the token request
// may ask for fewer of those, never for more, and a pair the user does
// not hold is invalid_authorization_details at the token request (the
// user is known only once approved), with the code kept unused; the
// verification page lists what was asked and marks what the user does
// not hold. It failed when the token request issued the user's pairs
// whatever the device asked ("asked ASX:quotes" held all three), when it
// issued the device's pairs without checking them against the user's
// ("asked a pair not held" got a token with NZX:depth), when the token
// request narrowed the user's pairs rather than the device's ("token
// request widens" got ASX:depth), and when the page left out the market
// data (the rows' page checks).
func TestEntitlementsDeviceNarrowed(t *testing.T) {
	f := newDeviceFixture(t)
	f.entitle("demo", "ASX:quotes ASX:depth NZX:quotes")
	b := loggedInDevice(t, f)
	for _, tc := range []struct {
		name   string
		device string // authorization_details of the device authorization
		token  string // authorization_details of the token request
		want   string // the token's pairs, "-" for invalid_authorization_details
		page   []string
	}{
		{"nothing asked: the user's pairs", "", "", "ASX:depth ASX:quotes NZX:quotes", nil},
		{"asked ASX:quotes", adASXQuotes, "", "ASX:quotes", []string{`id="market-data"`, "ASX quotes"}},
		{"asked no pair", `[]`, "", "", []string{`id="market-data"`, "None"}},
		{"token request asks fewer", adASXBoth, `[{"type":"market_data","venue":"ASX","feeds":["depth"]}]`, "ASX:depth",
			[]string{"ASX depth", "ASX quotes"}},
		{"token request asks the same", adASXNZX, adASXNZX, "ASX:quotes NZX:quotes", []string{"NZX quotes"}},
		{"token request widens", adASXQuotes, adASXBoth, "-", nil},
		{"token request asks a pair the user lacks", "", adNZXDepth, "-", nil},
		{"asked a pair not held", `[{"type":"market_data","venue":"NZX","feeds":["depth","quotes"]}]`, "", "-",
			[]string{"NZX depth<span", "Your account does not hold it.", `id="market-not-held"`, "NZX:depth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.startDeviceAsking("openid Service/Market", tc.device)
			confirm, done := confirmAndAllow(t, b, res)
			for _, want := range tc.page {
				if !strings.Contains(confirm.body, want) {
					t.Errorf("the confirmation page lacks %q: %s", want, confirm.body)
				}
			}
			if tc.device == "" && strings.Contains(confirm.body, `id="market-data"`) {
				t.Errorf("the page lists market data the device did not name: %s", confirm.body)
			}
			if notHeld := strings.Contains(done.body, "Device not connected"); notHeld != strings.Contains(tc.name, "not held") {
				t.Errorf("the result page: %s", done.body)
			}
			f.clock.Add(5 * time.Second)
			tok := f.pollAsking(res.str("device_code"), tc.token)
			if got := f.pairsOf(tok); got != tc.want {
				t.Fatalf("pairs %q, want %q: %d %s", got, tc.want, tok.status, tok.raw)
			}
			if tc.want != "-" {
				return
			}
			if tok.status != http.StatusBadRequest || tok.str("error") != oauth.ErrInvalidAuthorizationDetails {
				t.Fatalf("%d %s, want 400 invalid_authorization_details", tok.status, tok.raw)
			}
			if rec := f.deviceRecord(res.str("device_code")); !rec.UsedAt.IsZero() {
				t.Errorf("a refused token request used the code: %+v", rec)
			}
		})
	}
}

// The device authorization endpoint refuses authorization_details as the
// authorization endpoint does: malformed, of another type, of an invalid
// venue or feed, 400 invalid_authorization_details in an RFC 6749 error
// body, and no code stored. It failed when the endpoint ignored the
// parameter (200 and a code for every row).
func TestEntitlementsDeviceAuthorizationRefuses(t *testing.T) {
	f := newDeviceFixture(t)
	for _, tc := range []struct{ name, details string }{
		{"not JSON", `ASX:quotes`},
		{"an object, not an array", `{"type":"market_data","venue":"ASX","feeds":["quotes"]}`},
		{"another type", `[{"type":"payment_initiation","venue":"ASX","feeds":["quotes"]}]`},
		{"lower-case venue", `[{"type":"market_data","venue":"asx","feeds":["quotes"]}]`},
		{"no feeds", `[{"type":"market_data","venue":"ASX","feeds":[]}]`},
		{"a member more", `[{"type":"market_data","venue":"ASX","feeds":["quotes"],"locations":["x"]}]`},
		{"cross product lists", `[{"type":"market_data","venues":["ASX","NZX"],"feeds":["quotes"]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.deviceAuthorize(form("client_id", "tv", "scope", "openid", "authorization_details", tc.details))
			if res.status != http.StatusBadRequest || res.str("error") != oauth.ErrInvalidAuthorizationDetails ||
				res.str("error_description") == "" || res.str("device_code") != "" {
				t.Fatalf("%d %s, want 400 invalid_authorization_details", res.status, res.raw)
			}
			if cc := res.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				t.Errorf("Cache-Control %q", cc)
			}
		})
	}
}

// A device's refresh family holds the pairs its token was granted: a
// refresh gives those the user still holds, never a pair the user holds
// that the device did not ask for, and may ask for fewer but not for
// more (refused without rotating). It failed when the device grant gave
// its family the user's pairs rather than the narrowed ones (the first
// refresh held ASX:depth).
func TestEntitlementsDeviceRefresh(t *testing.T) {
	f := newDeviceFixture(t)
	f.entitle("demo", "ASX:quotes ASX:depth NZX:quotes")
	b := loggedInDevice(t, f)
	res := f.startDeviceAsking("openid offline_access Service/Market", adASXNZX)
	confirmAndAllow(t, b, res)
	f.clock.Add(5 * time.Second)
	tok := f.pollAsking(res.str("device_code"), "")
	if got := f.pairsOf(tok); got != "ASX:quotes NZX:quotes" {
		t.Fatalf("device token: %q %s", got, tok.raw)
	}
	rt := tok.str("refresh_token")
	for _, step := range []struct {
		name  string
		holds string // the user's set before the refresh; "" keeps it
		ask   string
		want  string // "-": invalid_authorization_details, not rotated
	}{
		{"asking nothing: the family's", "", "", "ASX:quotes NZX:quotes"},
		{"asking for a pair the user holds and the family lacks", "", adASXBoth, "-"},
		{"asking for fewer", "", adASXQuotes, "ASX:quotes"},
		{"NZX taken away", "ASX:quotes ASX:depth", "", "ASX:quotes"},
		{"asking for the pair taken away", "", `[{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`, "-"},
		{"NZX given back, NZX:depth given", "ASX:quotes ASX:depth NZX:quotes NZX:depth", "", "ASX:quotes NZX:quotes"},
	} {
		if step.holds != "" {
			f.entitle("demo", step.holds)
		}
		f.clock.Add(time.Second)
		v := form("grant_type", "refresh_token", "client_id", "tv", "refresh_token", rt)
		if step.ask != "" {
			v.Set("authorization_details", step.ask)
		}
		r := f.post(v)
		if got := f.pairsOf(r); got != step.want {
			t.Fatalf("%s: pairs %q, want %q: %s", step.name, got, step.want, r.raw)
		}
		if step.want == "-" {
			if r.str("error") != oauth.ErrInvalidAuthorizationDetails {
				t.Fatalf("%s: %s, want invalid_authorization_details", step.name, r.raw)
			}
			continue
		}
		rt = r.str("refresh_token")
	}
}
