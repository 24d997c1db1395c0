package identity

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// withEntitledService gives the client_credentials client svc ASX:quotes.
func withEntitledService(c *Config) {
	for i := range c.Clients {
		if c.Clients[i].ID == "svc" {
			c.Clients[i].Entitlements = entitle.MustParse("ASX:quotes")
		}
	}
}

// entitle sets what the user called name holds, as gatehouse user entitle
// and unentitle do.
func (f *fixture) entitle(name, pairs string) {
	f.t.Helper()
	now := f.clock.Now()
	if _, err := f.st.UpdateEntitlements(context.Background(), name, func(entitle.Set) (entitle.Set, error) {
		return entitle.MustParse(pairs), nil
	}, now, now.Add(time.Hour)); err != nil {
		f.t.Fatal(err)
	}
}

// pairsOf reads the pairs of a token response: those of its
// authorization_details and those of its access token's claim, which must
// agree; "-" when the response is an error.
func (f *fixture) pairsOf(res response) string {
	f.t.Helper()
	if res.status != http.StatusOK {
		return "-"
	}
	var fromBody entitle.Set
	if raw, ok := res.body["authorization_details"]; ok {
		b, _ := json.Marshal(raw)
		var err error
		if fromBody, err = entitle.ParseDetails(b); err != nil {
			f.t.Fatalf("the response's authorization_details %s: %v", b, err)
		}
	}
	claims, _ := f.parseToken(res.str("access_token"), "at+jwt")
	fromToken, err := entitle.FromClaim(claims["authorization_details"])
	if err != nil || !fromToken.Equal(fromBody) {
		f.t.Fatalf("the token holds %v (%v), the response says %v", fromToken, err, fromBody)
	}
	return fromToken.String()
}

// A grant carries what its holder holds, or the subset its
// authorization_details asks for; a pair not held, a malformed entry and
// another type are invalid_authorization_details, 400, before any token.
// It failed when NarrowDetails returned what was asked without the subset
// test (the NZX:depth rows got tokens).
func TestEntitlementGrants(t *testing.T) {
	f := newFixture(t, withEntitledService)
	f.entitle("demo", "ASX:quotes ASX:depth NZX:quotes")
	asx := `[{"type":"market_data","venue":"ASX","feeds":["quotes"]}]`
	for _, tc := range []struct {
		name    string
		form    []string
		service bool   // client_credentials of svc, else demo's password grant
		want    string // the pairs, or "-" for a refusal
		code    string // the refusal's error
	}{
		{"password, all held", nil, false, "ASX:depth ASX:quotes NZX:quotes", ""},
		{"password, fewer", []string{"authorization_details", asx}, false, "ASX:quotes", ""},
		{"password, none asked", []string{"authorization_details", `[]`}, false, "", ""},
		{"password, one not held", []string{"authorization_details", `[{"type":"market_data","venue":"NZX","feeds":["depth","quotes"]}]`}, false, "-", oauth.ErrInvalidAuthorizationDetails},
		{"password, lower-case venue", []string{"authorization_details", `[{"type":"market_data","venue":"asx","feeds":["quotes"]}]`}, false, "-", oauth.ErrInvalidAuthorizationDetails},
		{"password, another type", []string{"authorization_details", `[{"type":"payment_initiation","venue":"ASX","feeds":["quotes"]}]`}, false, "-", oauth.ErrInvalidAuthorizationDetails},
		{"password, cross product lists", []string{"authorization_details", `[{"type":"market_data","venues":["ASX","NZX"],"feeds":["quotes"]}]`}, false, "-", oauth.ErrInvalidAuthorizationDetails},
		{"password, not JSON", []string{"authorization_details", `ASX:quotes`}, false, "-", oauth.ErrInvalidAuthorizationDetails},
		{"client_credentials, all held", nil, true, "ASX:quotes", ""},
		{"client_credentials, asked", []string{"authorization_details", asx}, true, "ASX:quotes", ""},
		{"client_credentials, not held", []string{"authorization_details", `[{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`}, true, "-", oauth.ErrInvalidAuthorizationDetails},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res response
			if tc.service {
				res = f.post(form(append([]string{"grant_type", "client_credentials"}, tc.form...)...), basic("svc", "svc-secret"))
			} else {
				res = f.login("demo", "demo-pw", tc.form...)
			}
			if got := f.pairsOf(res); got != tc.want {
				t.Fatalf("pairs %q, want %q: %d %s", got, tc.want, res.status, res.raw)
			}
			if tc.code != "" && (res.status != http.StatusBadRequest || res.str("error") != tc.code) {
				t.Fatalf("%d %s, want 400 %s", res.status, res.raw, tc.code)
			}
		})
	}
}

// A refresh issues the family's pairs that the user still holds: a pair
// taken away is gone, a pair given back returns (the family had it), a
// pair the family never had needs a new login; a refresh may ask for
// fewer, never for more (refused before the token rotates). It failed
// when the refresh took the user's pairs without the family's (the
// ASX:depth row came out widened).
func TestEntitlementRefresh(t *testing.T) {
	f := newFixture(t)
	f.entitle("demo", "ASX:quotes NZX:quotes")
	res := f.login("demo", "demo-pw", "scope", "Service/Market offline_access")
	if got := f.pairsOf(res); got != "ASX:quotes NZX:quotes" {
		t.Fatalf("login: %q %s", got, res.raw)
	}
	rt := res.str("refresh_token")
	for _, step := range []struct {
		name    string
		holds   string // the user's set before the refresh; "" keeps it
		ask     string // authorization_details of the refresh
		want    string
		rotates bool
	}{
		{"NZX taken away, depth given", "ASX:quotes ASX:depth", "", "ASX:quotes", true},
		{"asking for a pair taken away", "", `[{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`, "-", false},
		{"asking for a pair the family never had", "", `[{"type":"market_data","venue":"ASX","feeds":["depth"]}]`, "-", false},
		{"NZX given back", "ASX:quotes ASX:depth NZX:quotes", "", "ASX:quotes NZX:quotes", true},
		{"asking for fewer", "", `[{"type":"market_data","venue":"NZX","feeds":["quotes"]}]`, "NZX:quotes", true},
		{"asking for nothing again: the family's", "", "", "ASX:quotes NZX:quotes", true},
		{"everything taken away", "", "", "ASX:quotes NZX:quotes", true},
	} {
		if step.name == "everything taken away" {
			f.entitle("demo", "")
			step.want = ""
		} else if step.holds != "" {
			f.entitle("demo", step.holds)
		}
		f.clock.Add(time.Second)
		extra := []string{}
		if step.ask != "" {
			extra = []string{"authorization_details", step.ask}
		}
		res := f.post(form(append([]string{"grant_type", "refresh_token", "client_id", "app", "refresh_token", rt}, extra...)...))
		if got := f.pairsOf(res); got != step.want {
			t.Fatalf("%s: pairs %q, want %q: %s", step.name, got, step.want, res.raw)
		}
		if !step.rotates {
			if res.str("error") != oauth.ErrInvalidAuthorizationDetails {
				t.Fatalf("%s: %s, want invalid_authorization_details", step.name, res.raw)
			}
			continue
		}
		rt = res.str("refresh_token")
	}
}

// After a change, a token issued before is refused by introspection
// (read from the store), userinfo and every HTTP route (the verifier, as
// ReasonEntitlementsChanged with the narrowed identity), and a new one is
// not; introspection and userinfo show a token's authorization_details;
// discovery lists the type. It failed when introspection did not read the
// change (the old token stayed active).
func TestEntitlementChangeRevokesForHTTP(t *testing.T) {
	f := newFixture(t, withEntitledService)
	f.entitle("demo", "ASX:quotes NZX:quotes")
	old := f.login("demo", "demo-pw", "scope", "openid Service/Market").str("access_token")
	introspect := func(tok string) map[string]any {
		t.Helper()
		return f.post(form("token", tok), func(r *http.Request) {
			r.URL.Path = PathIntrospection
			r.SetBasicAuth("svc", "svc-secret")
		}).body
	}
	userinfo := func(tok string) response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, testIssuer+PathUserinfo, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return f.do(req)
	}
	body := introspect(old)
	if body["active"] != true || !detailsAre(body["authorization_details"], "ASX:quotes NZX:quotes") {
		t.Fatalf("introspection before the change: %v", body)
	}
	if ui := userinfo(old); ui.status != http.StatusOK || !detailsAre(ui.body["authorization_details"], "ASX:quotes NZX:quotes") {
		t.Fatalf("userinfo before the change: %d %s", ui.status, ui.raw)
	}

	f.clock.Add(2 * time.Second)
	f.entitle("demo", "ASX:quotes")
	// Before the verifier reads the change: introspection reads the store.
	if body := introspect(old); body["active"] != false {
		t.Errorf("introspection after the change: %v", body)
	}
	if err := f.srv.Verifier().RefreshRevocations(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ui := userinfo(old); ui.status != http.StatusUnauthorized {
		t.Errorf("userinfo after the change: %d %s", ui.status, ui.raw)
	}
	_, err := f.srv.Verifier().Verify(context.Background(), old)
	ve, _ := err.(*verify.Error)
	if ve == nil || ve.Reason != verify.ReasonEntitlementsChanged || ve.Narrowed.Entitlements.String() != "ASX:quotes" {
		t.Errorf("Verify after the change: %v", err)
	}

	f.clock.Add(2 * time.Second)
	fresh := f.login("demo", "demo-pw", "scope", "openid Service/Market").str("access_token")
	if body := introspect(fresh); body["active"] != true || !detailsAre(body["authorization_details"], "ASX:quotes") {
		t.Errorf("introspection of a token issued after: %v", body)
	}
	if ui := userinfo(fresh); ui.status != http.StatusOK {
		t.Errorf("userinfo of a token issued after: %d %s", ui.status, ui.raw)
	}
	disc := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathDiscovery, nil))
	if types, _ := disc.body["authorization_details_types_supported"].([]any); len(types) != 1 || types[0] != "market_data" {
		t.Errorf("discovery lists %v", disc.body["authorization_details_types_supported"])
	}
}

// detailsAre reports whether a decoded authorization_details value holds
// exactly pairs.
func detailsAre(v any, pairs string) bool {
	s, err := entitle.FromClaim(v)
	return err == nil && s.Equal(entitle.MustParse(pairs))
}
