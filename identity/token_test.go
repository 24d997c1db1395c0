package identity

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

func TestPasswordGrant(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		form       url.Values
		mods       []func(*http.Request)
		wantStatus int
		wantErr    string
		wantScope  string
		wantRT     bool
		wantID     bool
	}{
		{name: "no scope grants the client's defaults the user holds",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw"),
			wantStatus: 200, wantScope: "openid profile email offline_access Service/Market Service/News", wantRT: true, wantID: true},
		{name: "requested scopes narrowed to the user's",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "Service/Market Service/Trading"),
			wantStatus: 200, wantScope: "Service/Market"},
		{name: "offline_access without openid: refresh token, no id token",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "offline_access Service/Market"),
			wantStatus: 200, wantScope: "offline_access Service/Market", wantRT: true},
		{name: "scope the client may not request",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "Service/Admin"),
			wantStatus: 400, wantErr: "invalid_scope"},
		{name: "scope only the client allows and the user lacks",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "Service/Trading"),
			wantStatus: 400, wantErr: "invalid_scope"},
		{name: "malformed scope",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "a\"b"),
			wantStatus: 400, wantErr: "invalid_scope"},
		{name: "wrong password",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo", "password", "nope"),
			wantStatus: 400, wantErr: "invalid_grant"},
		{name: "unknown user",
			form:       form("grant_type", "password", "client_id", "app", "username", "ghost", "password", "demo-pw"),
			wantStatus: 400, wantErr: "invalid_grant"},
		{name: "disabled user",
			form:       form("grant_type", "password", "client_id", "app", "username", "off", "password", "demo-pw"),
			wantStatus: 400, wantErr: "invalid_grant"},
		{name: "missing password",
			form:       form("grant_type", "password", "client_id", "app", "username", "demo"),
			wantStatus: 400, wantErr: "invalid_request"},
		{name: "confidential client with basic auth",
			form:       form("grant_type", "password", "username", "demo", "password", "demo-pw", "scope", "Service/Market"),
			mods:       []func(*http.Request){basic("conf", "conf-secret")},
			wantStatus: 200, wantScope: "Service/Market"},
		{name: "confidential client without its secret",
			form:       form("grant_type", "password", "client_id", "conf", "username", "demo", "password", "demo-pw"),
			wantStatus: 400, wantErr: "invalid_client"},
		{name: "grant the client is not configured for",
			form:       form("grant_type", "password", "client_id", "svc", "client_secret", "svc-secret", "username", "demo", "password", "demo-pw"),
			wantStatus: 400, wantErr: "unauthorized_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.post(tt.form, tt.mods...)
			if res.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tt.wantStatus, res.raw)
			}
			if tt.wantErr != "" {
				if res.str("error") != tt.wantErr {
					t.Fatalf("error %q, want %q", res.str("error"), tt.wantErr)
				}
				return
			}
			if res.str("token_type") != "Bearer" || res.body["expires_in"] != float64(3600) {
				t.Errorf("token_type %v, expires_in %v", res.body["token_type"], res.body["expires_in"])
			}
			if res.str("scope") != tt.wantScope {
				t.Errorf("scope %q, want %q", res.str("scope"), tt.wantScope)
			}
			if got := res.str("refresh_token") != ""; got != tt.wantRT {
				t.Errorf("refresh token present: %v, want %v", got, tt.wantRT)
			}
			if got := res.str("id_token") != ""; got != tt.wantID {
				t.Errorf("id token present: %v, want %v", got, tt.wantID)
			}
			claims, hdr := f.parseToken(res.str("access_token"), "at+jwt")
			if hdr["kid"] == "" {
				t.Error("no kid")
			}
			if claims["sub"] != "sub-demo" || claims["aud"] != "gatehouse" || claims["scope"] != tt.wantScope ||
				claims["jti"] == "" || claims["client_id"] == "" || claims["auth_time"] == nil || claims["nbf"] == nil || claims["iat"] == nil {
				t.Errorf("access token claims %v", claims)
			}
			if tt.wantID {
				id, _ := f.parseToken(res.str("id_token"), "JWT")
				if id["aud"] != "app" || id["sub"] != "sub-demo" || id["name"] != "Demo User" || id["email"] != "demo@example.com" || id["at_hash"] == nil {
					t.Errorf("id token claims %v", id)
				}
			}
		})
	}
}

// A wrong password, an unknown user and a disabled user get the very same
// answer: no account enumeration by message.
func TestBadCredentialsIndistinguishable(t *testing.T) {
	f := newFixture(t)
	var bodies []string
	for _, u := range [][2]string{{"demo", "wrong"}, {"ghost", "demo-pw"}, {"off", "demo-pw"}, {strings.Repeat("x", 300), "demo-pw"}} {
		res := f.login(u[0], u[1])
		bodies = append(bodies, res.raw)
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("answers differ: %q vs %q", b, bodies[0])
		}
	}
}

func TestClientCredentials(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		form       url.Values
		mods       []func(*http.Request)
		wantStatus int
		wantErr    string
		wantScope  string
		wantAuth   string
	}{
		{name: "basic, default scopes", form: form("grant_type", "client_credentials"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 200, wantScope: "Service/Market"},
		{name: "post, named scopes", form: form("grant_type", "client_credentials", "client_id", "svc", "client_secret", "svc-secret", "scope", "Service/News Service/Market"),
			wantStatus: 200, wantScope: "Service/News Service/Market"},
		{name: "basic, wrong secret: 401 with WWW-Authenticate", form: form("grant_type", "client_credentials"), mods: []func(*http.Request){basic("svc", "nope")},
			wantStatus: 401, wantErr: "invalid_client", wantAuth: "Basic"},
		{name: "post, wrong secret: 400", form: form("grant_type", "client_credentials", "client_id", "svc", "client_secret", "nope"),
			wantStatus: 400, wantErr: "invalid_client"},
		{name: "unknown client, basic", form: form("grant_type", "client_credentials"), mods: []func(*http.Request){basic("who", "x")},
			wantStatus: 401, wantErr: "invalid_client", wantAuth: "Basic"},
		{name: "no client at all", form: form("grant_type", "client_credentials"),
			wantStatus: 400, wantErr: "invalid_client"},
		{name: "two authentication methods", form: form("grant_type", "client_credentials", "client_secret", "svc-secret"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "invalid_request"},
		{name: "client_id differs from basic", form: form("grant_type", "client_credentials", "client_id", "app"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "invalid_request"},
		{name: "public client may not", form: form("grant_type", "client_credentials", "client_id", "app"),
			wantStatus: 400, wantErr: "unauthorized_client"},
		{name: "scope beyond the client", form: form("grant_type", "client_credentials", "scope", "Service/Trading"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "invalid_scope"},
		{name: "unknown grant type", form: form("grant_type", "urn:example:magic"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "unsupported_grant_type"},
		{name: "known grant not configured", form: form("grant_type", "authorization_code", "code", "x"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "unauthorized_client"},
		{name: "missing grant type", form: form("scope", "Service/Market"), mods: []func(*http.Request){basic("svc", "svc-secret")},
			wantStatus: 400, wantErr: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.post(tt.form, tt.mods...)
			if res.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tt.wantStatus, res.raw)
			}
			if got := res.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, tt.wantAuth) || (tt.wantAuth == "" && got != "") {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.wantAuth)
			}
			if tt.wantErr != "" {
				if res.str("error") != tt.wantErr {
					t.Fatalf("error %q, want %q", res.str("error"), tt.wantErr)
				}
				return
			}
			if res.str("scope") != tt.wantScope || res.str("refresh_token") != "" || res.str("id_token") != "" {
				t.Errorf("body %s", res.raw)
			}
			claims, _ := f.parseToken(res.str("access_token"), "at+jwt")
			if claims["sub"] != "svc" || claims["client_id"] != "svc" || claims["auth_time"] != nil {
				t.Errorf("claims %v", claims)
			}
		})
	}
}

func TestUniformErrorStatus(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.UniformErrorStatus = true })
	res := f.post(form("grant_type", "client_credentials"), basic("svc", "nope"))
	if res.status != 400 || res.str("error") != "invalid_client" || res.header.Get("WWW-Authenticate") != "" {
		t.Fatalf("got %d %q %q", res.status, res.raw, res.header.Get("WWW-Authenticate"))
	}
}

// Malformed requests get an RFC 6749 error body and the no-store headers,
// and change nothing: no password is checked (so no failure is counted),
// no token is issued and no refresh family stored. Several are password
// grants that would issue a refresh family if the form checks let them
// through. (The status of each error form is the integration tests'
// contract; this is the unit-level check of what they leave behind.)
func TestMalformedRequestsChangeNothing(t *testing.T) {
	f := newFixture(t)
	good := form("grant_type", "client_credentials", "client_id", "svc", "client_secret", "svc-secret").Encode()
	login := form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw", "scope", "offline_access Service/Market").Encode()
	req := func(method, target, ctype, body string) *http.Request {
		r := httptest.NewRequest(method, testIssuer+target, strings.NewReader(body))
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		return r
	}
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
	}{
		{"GET", req(http.MethodGet, PathToken, "", ""), 405},
		{"PUT", req(http.MethodPut, PathToken, "application/x-www-form-urlencoded", good), 405},
		{"JSON body", req(http.MethodPost, PathToken, "application/json", `{"grant_type":"client_credentials"}`), 400},
		{"no content type", req(http.MethodPost, PathToken, "", good), 400},
		{"body over 64 KiB", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", good+"&pad="+strings.Repeat("a", 70<<10)), 413},
		{"repeated parameter", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", good+"&grant_type=password"), 400},
		{"repeated client_secret", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", good+"&client_secret=x"), 400},
		{"parameters in the URL", req(http.MethodPost, PathToken+"?client_secret=svc-secret", "application/x-www-form-urlencoded", good), 400},
		{"malformed form", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", "a=%zz"), 400},
		{"login with a repeated parameter", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", login+"&username=other"), 400},
		{"login with the password in the URL", req(http.MethodPost, PathToken+"?password=demo-pw", "application/x-www-form-urlencoded", login), 400},
		{"login as JSON", req(http.MethodPost, PathToken, "application/json", `{"grant_type":"password","client_id":"app","username":"demo","password":"demo-pw"}`), 400},
		{"login by GET", req(http.MethodGet, PathToken+"?"+login, "", ""), 405},
		{"login over 64 KiB", req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", login+"&pad="+strings.Repeat("a", 70<<10)), 413},
		{"malformed basic", func() *http.Request {
			r := req(http.MethodPost, PathToken, "application/x-www-form-urlencoded", "grant_type=client_credentials")
			r.Header.Set("Authorization", "Basic !!!")
			return r
		}(), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.do(tt.req)
			if res.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", res.status, tt.wantStatus, res.raw)
			}
			if res.str("error") == "" {
				t.Fatalf("no RFC 6749 error body: %s", res.raw)
			}
			checkNoStore(t, res.header)
		})
	}
	// None of it checked a password (failure counters are written only
	// after a hash), and none stored a family, a token or an access-token
	// record: removing everything as expired a century on finds nothing.
	if n := f.srv.hashCount(); n != 0 {
		t.Fatalf("malformed requests computed %d password hashes", n)
	}
	if n, err := f.st.DeleteExpired(t.Context(), f.clock.Now().AddDate(100, 0, 0)); err != nil || n != 0 {
		t.Fatalf("malformed requests left %d records in the store (%v)", n, err)
	}
}

func checkNoStore(t *testing.T, h http.Header) {
	t.Helper()
	want := map[string]string{
		"Cache-Control":   "no-store, no-cache, max-age=0",
		"Pragma":          "no-cache",
		"Referrer-Policy": "no-referrer",
		"Content-Type":    "application/json; charset=UTF-8",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if h.Get("Strict-Transport-Security") == "" {
		t.Error("no Strict-Transport-Security")
	}
}

func TestSuccessHeaders(t *testing.T) {
	f := newFixture(t)
	res := f.login("demo", "demo-pw")
	if res.status != 200 {
		t.Fatal(res.raw)
	}
	checkNoStore(t, res.header)
}

func TestCORS(t *testing.T) {
	f := newFixture(t)
	pre := httptest.NewRequest(http.MethodOptions, testIssuer+PathToken, nil)
	pre.Header.Set("Origin", "http://localhost:3000")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	res := f.do(pre)
	if res.status != 204 || res.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(res.header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", res.status, res.header)
	}
	pre.Header.Set("Origin", "http://evil.test")
	if res := f.do(pre); res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin allowed: %v", res.header)
	}
	withOrigin := func(o string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Origin", o) } }
	res = f.login("demo", "demo-pw", "scope", "Service/Market")
	if res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS header without Origin")
	}
	res = f.post(form("grant_type", "password", "client_id", "app", "username", "demo", "password", "demo-pw"), withOrigin("http://localhost:3000"))
	if res.status != 200 || res.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Fatalf("allowed origin: %d %v", res.status, res.header)
	}
	// Another client does not allow that origin.
	res = f.post(form("grant_type", "client_credentials", "client_id", "svc", "client_secret", "svc-secret"), withOrigin("http://localhost:3000"))
	if res.status != 200 || res.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("origin of another client allowed: %v", res.header)
	}
}

func TestDiscoveryAndJWKS(t *testing.T) {
	f := newFixture(t)
	res := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathDiscovery, nil))
	if res.status != 200 || res.header.Get("Content-Type") != "application/json; charset=UTF-8" {
		t.Fatalf("%d %v", res.status, res.header)
	}
	urls := map[string]string{
		"issuer": "", "jwks_uri": PathJWKS, "authorization_endpoint": PathAuthorize, "token_endpoint": PathToken,
		"userinfo_endpoint": PathUserinfo, "end_session_endpoint": PathEndSession, "check_session_iframe": PathCheckSession,
		"revocation_endpoint": PathRevocation, "introspection_endpoint": PathIntrospection,
		"device_authorization_endpoint": PathDeviceAuthorize,
	}
	for k, p := range urls {
		if res.str(k) != testIssuer+p {
			t.Errorf("%s = %q", k, res.str(k))
		}
	}
	for _, k := range []string{"frontchannel_logout_supported", "frontchannel_logout_session_supported",
		"backchannel_logout_supported", "backchannel_logout_session_supported", "request_parameter_supported"} {
		if res.body[k] != true {
			t.Errorf("%s = %v", k, res.body[k])
		}
	}
	// The lists' exact contents are the integration tests' contract
	// (integration/discovery_test.go); here, that each is a list and the
	// configured scopes are published.
	for _, k := range []string{"scopes_supported", "claims_supported", "grant_types_supported", "response_types_supported",
		"response_modes_supported", "token_endpoint_auth_methods_supported", "id_token_signing_alg_values_supported",
		"subject_types_supported", "code_challenge_methods_supported"} {
		if list, ok := res.body[k].([]any); !ok || len(list) == 0 {
			t.Errorf("%s = %v, want a non-empty list", k, res.body[k])
		}
	}
	// What the authorization endpoint does beyond docs/api-surface.md's table.
	if res.body["request_uri_parameter_supported"] != false || res.body["claims_parameter_supported"] != false ||
		res.body["authorization_response_iss_parameter_supported"] != true {
		t.Errorf("request_uri, claims, iss: %v %v %v", res.body["request_uri_parameter_supported"],
			res.body["claims_parameter_supported"], res.body["authorization_response_iss_parameter_supported"])
	}
	if got := fmt.Sprint(res.body["request_object_signing_alg_values_supported"]); got != "[none RS256 ES256]" {
		t.Errorf("request_object_signing_alg_values_supported = %s", got)
	}
	if got := res.body["scopes_supported"].([]any); len(got) != len(DefaultScopes) {
		t.Errorf("scopes_supported = %v, want %v", got, DefaultScopes)
	}
	jwks := f.do(httptest.NewRequest(http.MethodGet, testIssuer+PathJWKS, nil))
	set := jwks.body["keys"].([]any)
	if len(set) != 1 {
		t.Fatalf("keys: %v", set)
	}
	k := set[0].(map[string]any)
	if k["kty"] != "RSA" || k["use"] != "sig" || k["alg"] != "RS256" || k["kid"] == "" || k["n"] == "" || k["e"] != "AQAB" {
		t.Fatalf("key %v", k)
	}
	if res := f.do(httptest.NewRequest(http.MethodPost, testIssuer+PathDiscovery, nil)); res.status != 405 {
		t.Fatalf("POST discovery: %d", res.status)
	}
}

func TestIssuerPathPrefix(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Issuer = "https://auth.example.com/id" })
	if f.srv.Endpoint("/id"+PathToken) == nil || f.srv.Endpoint(PathToken) != nil {
		t.Fatal("endpoints not under the issuer's path")
	}
}

// The implicit grant is an authorization-endpoint flow: at the token
// endpoint it is unsupported, whatever the client may use.
func TestImplicitAtTokenEndpoint(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Clients[0].GrantTypes = append(c.Clients[0].GrantTypes, oauth.GrantImplicit)
	})
	for _, client := range []string{"app", "app2"} {
		res := f.post(form("grant_type", "implicit", "client_id", client))
		if res.status != 400 || res.str("error") != oauth.ErrUnsupportedGrantType {
			t.Errorf("%s: %d %s", client, res.status, res.raw)
		}
	}
}
