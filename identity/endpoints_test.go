package identity

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/identity/verify/verifytest"
)

// userinfo calls the userinfo endpoint with a bearer token.
func (f *fixture) userinfo(method, token string) response {
	f.t.Helper()
	req := httptest.NewRequest(method, testIssuer+PathUserinfo, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return f.do(req)
}

func (f *fixture) introspect(token string, auth func(*http.Request), extra ...string) response {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathIntrospection,
		strings.NewReader(form(append([]string{"token", token}, extra...)...).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if auth != nil {
		auth(req)
	}
	return f.do(req)
}

func (f *fixture) revoke(fm url.Values, mods ...func(*http.Request)) response {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testIssuer+PathRevocation, strings.NewReader(fm.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, m := range mods {
		m(req)
	}
	return f.do(req)
}

// hostileIssuer signs hostile tokens as if with the server's own key.
func (f *fixture) hostileIssuer() *verifytest.Issuer {
	kid, key := f.srv.SigningKeyForTest()
	return &verifytest.Issuer{URL: testIssuer, Audience: "gatehouse", Kid: kid, Private: key, Now: f.clock.Now}
}

func TestUserinfo(t *testing.T) {
	f := newFixture(t)
	full := f.login("demo", "demo-pw").str("access_token")
	noOpenID := f.login("demo", "demo-pw", "scope", "Service/Market").str("access_token")
	onlyOpenID := f.login("demo", "demo-pw", "scope", "openid").str("access_token")
	tests := []struct {
		name       string
		method     string
		token      string
		header     string // raw Authorization header instead of token
		target     string
		wantStatus int
		wantChall  string
	}{
		{name: "GET with every scope", method: "GET", token: full, wantStatus: 200},
		{name: "POST", method: "POST", token: full, wantStatus: 200},
		{name: "openid only: sub alone", method: "GET", token: onlyOpenID, wantStatus: 200},
		{name: "no openid scope", method: "GET", token: noOpenID, wantStatus: 403, wantChall: `error="insufficient_scope"`},
		{name: "no token", method: "GET", wantStatus: 401, wantChall: `Bearer realm="gatehouse"`},
		{name: "token in the query string", method: "GET", target: "?access_token=" + full, wantStatus: 400, wantChall: `error="invalid_request"`},
		{name: "Basic scheme", method: "GET", header: "Basic Zm9vOmJhcg==", wantStatus: 400, wantChall: `error="invalid_request"`},
		{name: "garbage token", method: "GET", token: "abc", wantStatus: 401, wantChall: `error="invalid_token"`},
		{name: "PUT", method: "PUT", token: full, wantStatus: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, testIssuer+PathUserinfo+tt.target, nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			res := f.do(req)
			if res.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tt.wantStatus, res.raw)
			}
			got := res.header.Get("WWW-Authenticate")
			if (tt.wantChall == "" && got != "") || !strings.Contains(got, tt.wantChall) {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tt.wantChall)
			}
			if tt.wantStatus == 200 && res.str("sub") != "sub-demo" {
				t.Fatalf("body %s", res.raw)
			}
		})
	}
	res := f.userinfo("GET", full)
	if res.str("name") != "Demo User" || res.str("email") != "demo@example.com" || res.body["email_verified"] != false ||
		res.str("preferred_username") != "demo" {
		t.Fatalf("claims %s", res.raw)
	}
	if res := f.userinfo("GET", onlyOpenID); len(res.body) != 1 {
		t.Fatalf("openid alone leaked claims: %s", res.raw)
	}
}

// The hostile-token table through userinfo: each one refused with 401.
func TestUserinfoHostileTokens(t *testing.T) {
	f := newFixture(t)
	for _, tc := range f.hostileIssuer().Hostile("openid", "profile") {
		t.Run(tc.Name, func(t *testing.T) {
			res := f.userinfo("GET", tc.Token)
			if res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Fatalf("%d %v %s", res.status, res.header, res.raw)
			}
		})
	}
	// The table is not refused for a reason of its own making: the same
	// issuer's good token passes.
	good := f.hostileIssuer()
	c := good.Claims("sub-demo", "openid")
	if res := f.userinfo("GET", verifytest.Sign(good.Header(), c, good.Private)); res.status != 200 {
		t.Fatalf("good token refused: %d %s", res.status, res.raw)
	}
}

func TestIntrospection(t *testing.T) {
	f := newFixture(t)
	login := f.login("demo", "demo-pw")
	at, rt := login.str("access_token"), login.str("refresh_token")
	svc := basic("svc", "svc-secret")
	tests := []struct {
		name       string
		token      string
		auth       func(*http.Request)
		extra      []string
		wantStatus int
		wantActive bool
		wantType   string
	}{
		{name: "access token by an introspecting client", token: at, auth: svc, wantStatus: 200, wantActive: true, wantType: "access_token"},
		{name: "access token by its API resource", token: at, auth: basic("gatehouse", "api-secret"), wantStatus: 200, wantActive: true, wantType: "access_token"},
		{name: "access token by another API resource", token: at, auth: basic("other-api", "other-secret"), wantStatus: 200},
		{name: "refresh token of another client", token: rt, auth: svc, extra: []string{"token_type_hint", "refresh_token"}, wantStatus: 200},
		{name: "garbage", token: "garbage", auth: svc, wantStatus: 200},
		{name: "foreign token", token: hostileToken(t, f, "token from another issuer"), auth: svc, wantStatus: 200},
		{name: "API resource with a wrong secret", token: at, auth: basic("gatehouse", "nope"), wantStatus: 401},
		{name: "client without the right", token: at, auth: basic("conf", "conf-secret"), wantStatus: 403},
		{name: "public client", token: at, auth: func(r *http.Request) {}, extra: []string{"client_id", "app"}, wantStatus: 403},
		{name: "no authentication", token: at, wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.introspect(tt.token, tt.auth, tt.extra...)
			if res.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tt.wantStatus, res.raw)
			}
			if tt.wantStatus != 200 {
				return
			}
			if res.body["active"] != tt.wantActive || res.str("token_type") != tt.wantType {
				t.Fatalf("body %s", res.raw)
			}
			if tt.wantActive && (res.str("sub") != "sub-demo" || res.str("client_id") != "app" || res.str("scope") == "" || res.body["exp"] == nil) {
				t.Fatalf("claims %s", res.raw)
			}
			if !tt.wantActive && len(res.body) != 1 {
				t.Fatalf("inactive answer says more than active: %s", res.raw)
			}
		})
	}
	t.Run("expired access token", func(t *testing.T) {
		f := newFixture(t)
		at := f.login("demo", "demo-pw").str("access_token")
		f.clock.Add(2 * time.Hour)
		if res := f.introspect(at, svc); res.body["active"] != false {
			t.Fatal(res.raw)
		}
	})
}

func TestRevocation(t *testing.T) {
	t.Run("refresh token revokes the family and its access tokens", func(t *testing.T) {
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		next := f.refresh("app", login.str("refresh_token"))
		if res := f.revoke(form("token", next.str("refresh_token"), "client_id", "app", "token_type_hint", "refresh_token")); res.status != 200 {
			t.Fatal(res.raw)
		}
		if res := f.refresh("app", next.str("refresh_token")); res.str("error") != "invalid_grant" {
			t.Fatal(res.raw)
		}
		for _, at := range []string{login.str("access_token"), next.str("access_token")} {
			if res := f.userinfo("GET", at); res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), "revoked") {
				t.Fatalf("access token of a revoked family: %d %v", res.status, res.header)
			}
			if res := f.introspect(at, basic("svc", "svc-secret")); res.body["active"] != false {
				t.Fatal(res.raw)
			}
		}
	})
	t.Run("an earlier refresh token revokes the family", func(t *testing.T) {
		// It failed when: the revocation endpoint looked up the current
		// generation only, answered 200 and did nothing, while the newest
		// token went on refreshing.
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		next := f.refresh("app", login.str("refresh_token"))
		third := f.refresh("app", next.str("refresh_token"))
		f.clock.Add(time.Minute) // past the grace window of each rotation
		if res := f.revoke(form("token", login.str("refresh_token"), "client_id", "app")); res.status != 200 {
			t.Fatal(res.raw)
		}
		if res := f.refresh("app", third.str("refresh_token")); res.str("error") != "invalid_grant" {
			t.Fatalf("the newest token of a family revoked by an earlier one: %s", res.raw)
		}
		for _, at := range []string{login.str("access_token"), third.str("access_token")} {
			if res := f.userinfo("GET", at); res.status != 401 {
				t.Fatalf("access token of a revoked family: %d", res.status)
			}
		}
	})
	t.Run("a forged or another client's earlier token changes nothing", func(t *testing.T) {
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		next := f.refresh("app", login.str("refresh_token"))
		f.clock.Add(time.Minute)
		old := login.str("refresh_token")
		forged := old[:len(old)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(old, "AA")]
		for _, fm := range []url.Values{
			form("token", forged, "client_id", "app"),
			form("token", old, "client_id", "app2"),
		} {
			if res := f.revoke(fm); res.status != 200 {
				t.Fatal(res.raw)
			}
		}
		if res := f.refresh("app", next.str("refresh_token")); res.status != 200 {
			t.Fatalf("a refused revocation revoked the family: %s", res.raw)
		}
	})
	t.Run("access token by jti", func(t *testing.T) {
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		at := login.str("access_token")
		if res := f.userinfo("GET", at); res.status != 200 {
			t.Fatal(res.raw) // now cached
		}
		if res := f.revoke(form("token", at, "client_id", "app")); res.status != 200 {
			t.Fatal(res.raw)
		}
		if res := f.userinfo("GET", at); res.status != 401 {
			t.Fatalf("revoked access token served from the cache: %d", res.status)
		}
		if res := f.introspect(at, basic("svc", "svc-secret")); res.body["active"] != false {
			t.Fatal(res.raw)
		}
		// The refresh token of the grant still works: only that token was revoked.
		if res := f.refresh("app", login.str("refresh_token")); res.status != 200 {
			t.Fatal(res.raw)
		}
	})
	t.Run("a revocation outlives its token by the verifiers' leeway", func(t *testing.T) {
		// Dropped at the token's expiry (as it was), the revocation was purged,
		// or missed by a verifier's full reload, while a verifier still
		// accepted the token within its leeway: the revoked token was good again.
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		at := login.str("access_token")
		if res := f.revoke(form("token", at, "client_id", "app")); res.status != 200 {
			t.Fatal(res.raw)
		}
		exp, _ := login.body["expires_in"].(float64)
		f.clock.Add(time.Duration(exp)*time.Second + 5*time.Second) // inside the default leeway
		if _, err := f.st.DeleteExpired(t.Context(), f.clock.Now()); err != nil {
			t.Fatal(err)
		}
		// This server's own verifier has no leeway; another's (gatehouse_auth,
		// leeway up to verify.MaxLeeway) reads the same list.
		raw, err := base64.RawURLEncoding.DecodeString(strings.Split(at, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			JTI string `json:"jti"`
			Sub string `json:"sub"`
			IAT int64  `json:"iat"`
		}
		if err := json.Unmarshal(raw, &claims); err != nil {
			t.Fatal(err)
		}
		revoked, err := f.st.AccessTokenRevoked(t.Context(), claims.JTI, "", claims.Sub, time.Unix(claims.IAT, 0))
		if err != nil || !revoked {
			t.Fatalf("5 s past its expiry the store no longer holds the token's revocation (%v)", err)
		}
	})
	t.Run("requests that revoke nothing", func(t *testing.T) {
		f := newFixture(t)
		login := f.login("demo", "demo-pw")
		cases := []struct {
			name       string
			form       url.Values
			mods       []func(*http.Request)
			wantStatus int
		}{
			{"unknown token", form("token", "nope", "client_id", "app"), nil, 200},
			{"another client's refresh token", form("token", login.str("refresh_token"), "client_id", "app2"), nil, 200},
			{"another client's access token", form("token", login.str("access_token")), []func(*http.Request){basic("svc", "svc-secret")}, 200},
			{"missing token", form("client_id", "app"), nil, 400},
			{"wrong client secret", form("token", login.str("refresh_token")), []func(*http.Request){basic("svc", "bad")}, 401},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if res := f.revoke(c.form, c.mods...); res.status != c.wantStatus {
					t.Fatalf("%d %s", res.status, res.raw)
				}
			})
		}
		if res := f.userinfo("GET", login.str("access_token")); res.status != 200 {
			t.Fatal("a refused revocation changed something")
		}
		if res := f.refresh("app", login.str("refresh_token")); res.status != 200 {
			t.Fatal(res.raw)
		}
	})
}

// hostileToken is the token of the hostile table's case called name.
func hostileToken(t *testing.T, f *fixture, name string) string {
	t.Helper()
	for _, tc := range f.hostileIssuer().Hostile() {
		if tc.Name == name {
			return tc.Token
		}
	}
	t.Fatalf("no hostile case %q", name)
	return ""
}

// RFC 7662 §2.1, §2.3: introspection without credentials, or with wrong
// ones, is 401 with a challenge.
func TestIntrospectionNeedsCredentials(t *testing.T) {
	f := newFixture(t)
	at := f.login("demo", "demo-pw").str("access_token")
	for name, auth := range map[string]func(*http.Request){
		"none":                 func(*http.Request) {},
		"wrong Basic secret":   basic("svc", "nope"),
		"wrong secret in form": func(r *http.Request) {},
	} {
		t.Run(name, func(t *testing.T) {
			extra := []string{}
			if name == "wrong secret in form" {
				extra = []string{"client_id", "svc", "client_secret", "nope"}
			}
			res := f.introspect(at, auth, extra...)
			if res.status != http.StatusUnauthorized || res.str("error") != "invalid_client" ||
				!strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Basic") {
				t.Fatalf("%d %v %s", res.status, res.header, res.raw)
			}
		})
	}
}

// Every other token the server mints, signed with the same key, is refused
// where an access token is expected: as the bearer token of userinfo, and
// at introspection (inactive, whatever the hint). The hostile table makes
// such tokens by hand; these are the server's own.
func TestOtherTokenTypesAreNoAccessTokens(t *testing.T) {
	f := newFixture(t)
	login := f.login("demo", "demo-pw", "scope", "openid profile email offline_access Service/Market")
	at, rt, idt := login.str("access_token"), login.str("refresh_token"), login.str("id_token")
	if at == "" || rt == "" || idt == "" {
		t.Fatalf("login: %s", login.raw)
	}
	logoutTok, _, err := f.srv.tokens.LogoutToken("app", "", "sub-demo", "sid-1")
	if err != nil {
		t.Fatal(err)
	}
	if res := f.userinfo("GET", at); res.status != 200 {
		t.Fatalf("the access token itself: %d %s", res.status, res.raw)
	}
	svc := basic("svc", "svc-secret")
	for name, tok := range map[string]string{"id token": idt, "logout token": logoutTok, "refresh token": rt} {
		t.Run(name, func(t *testing.T) {
			if res := f.userinfo("GET", tok); res.status != 401 || !strings.Contains(res.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("userinfo: %d %s", res.status, res.raw)
			}
			for _, hint := range []string{"access_token", "refresh_token", ""} {
				if res := f.introspect(tok, svc, "token_type_hint", hint); res.status != 200 || res.body["active"] != false {
					t.Errorf("introspection (hint %q) by another client: %d %s", hint, res.status, res.raw)
				}
			}
		})
	}
}
