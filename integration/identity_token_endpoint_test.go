package integration

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSpecPasswordThenRefresh sends §4.2 and then §4.3 exactly as shown.
func TestSpecPasswordThenRefresh(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)

	resp, body := g.Do(t, specRequest(t, g, "grant_type=password&username=demo&password=demo&client_id=demo-app"))
	first := checkSpecResponse(t, resp, body)

	resp, body = g.Do(t, specRequest(t, g, "grant_type=refresh_token&refresh_token="+url.QueryEscape(first.RefreshToken)+"&client_id=demo-app"))
	second := checkSpecResponse(t, resp, body)
	if second.AccessToken == first.AccessToken {
		t.Error("the refresh returned the same access token")
	}
	if second.RefreshToken == first.RefreshToken {
		t.Error("the refresh returned the same refresh token")
	}
}

// TestTokenEndpointErrors checks the error forms through the real server.
func TestTokenEndpointErrors(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	wrongPassword := "wrong-password-" + rand.Text()
	wrongSecret := "wrong-secret-" + rand.Text()
	g.AddSecret(wrongPassword, wrongSecret, basicCredentials(serviceClient, wrongSecret))

	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		basic      [2]string // client id and secret for a Basic header
		rawAuth    string    // an Authorization header as is
		ctype      string    // the Content-Type, when not the form's ("-": none)
		query      string    // a query string for the URL
		wantStatus int
		wantError  string
		check      func(t *testing.T, h http.Header)
	}{
		{
			name:       "wrong password",
			body:       form("grant_type", "password", "username", "demo", "password", wrongPassword, "client_id", publicClient),
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_grant",
		},
		{
			name:       "wrong client secret in Basic",
			body:       form("grant_type", "client_credentials"),
			basic:      [2]string{serviceClient, wrongSecret},
			wantStatus: http.StatusUnauthorized,
			wantError:  "invalid_client",
			check: func(t *testing.T, h http.Header) {
				if got := h.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic") {
					t.Errorf("WWW-Authenticate = %q, want a Basic challenge", got)
				}
			},
		},
		{
			name:       "GET",
			method:     http.MethodGet,
			wantStatus: http.StatusMethodNotAllowed,
			wantError:  "invalid_request",
			check: func(t *testing.T, h http.Header) {
				if got := h.Get("Allow"); !strings.Contains(got, http.MethodPost) {
					t.Errorf("Allow = %q, want POST in it", got)
				}
			},
		},
		{
			name:       "body over 64 KiB",
			body:       form("grant_type", "password", "client_id", publicClient, "padding", strings.Repeat("a", 64<<10)),
			wantStatus: http.StatusRequestEntityTooLarge,
			wantError:  "invalid_request",
		},
		{
			name:       "unknown grant type",
			body:       form("grant_type", "urn:example:no-such-grant", "client_id", publicClient),
			wantStatus: http.StatusBadRequest,
			wantError:  "unsupported_grant_type",
		},
		{
			name:       "public client asking client_credentials",
			body:       form("grant_type", "client_credentials", "client_id", publicClient),
			wantStatus: http.StatusBadRequest,
			wantError:  "unauthorized_client",
		},
		{
			name:       "implicit at the token endpoint",
			body:       form("grant_type", "implicit", "client_id", publicClient),
			wantStatus: http.StatusBadRequest,
			wantError:  "unsupported_grant_type",
		},
		{
			name:       "scope the client may not request",
			body:       form("grant_type", "client_credentials", "scope", "Service/Admin"),
			basic:      [2]string{serviceClient, serviceSecret},
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_scope",
		},
		{
			name:       "JSON body",
			body:       `{"grant_type":"password","client_id":"demo-app","username":"demo","password":"demo"}`,
			ctype:      "application/json",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "no content type",
			body:       form("grant_type", "password", "username", "demo", "password", "demo", "client_id", publicClient),
			ctype:      "-",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "repeated parameter",
			body:       form("grant_type", "password", "username", "demo", "password", "demo", "client_id", publicClient) + "&username=trader",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "repeated parameter with an empty second value",
			body:       form("grant_type", "password", "username", "demo", "password", "demo", "client_id", publicClient) + "&grant_type=",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "parameters in the URL",
			body:       form("grant_type", "password", "username", "demo", "client_id", publicClient),
			query:      "password=demo",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "malformed form",
			body:       "grant_type=password&a=%zz",
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
		{
			name:       "malformed Basic credentials",
			body:       form("grant_type", "client_credentials"),
			rawAuth:    "Basic !!!",
			wantStatus: http.StatusUnauthorized,
			wantError:  "invalid_client",
		},
		{
			name:       "two client authentication methods",
			body:       form("grant_type", "client_credentials", "client_secret", serviceSecret),
			basic:      [2]string{serviceClient, serviceSecret},
			wantStatus: http.StatusBadRequest,
			wantError:  "invalid_request",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req *http.Request
			if tc.method == http.MethodGet {
				req = mustRequest(t, http.MethodGet, g.TokenEndpoint(t), nil)
				req.Header.Set("Accept", "application/json")
			} else {
				req = specRequest(t, g, tc.body)
			}
			if tc.basic[0] != "" {
				req.Header.Set("Authorization", "Basic "+basicCredentials(tc.basic[0], tc.basic[1]))
			}
			if tc.rawAuth != "" {
				req.Header.Set("Authorization", tc.rawAuth)
			}
			switch tc.ctype {
			case "":
			case "-":
				req.Header.Del("Content-Type")
			default:
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.URL.RawQuery = tc.query
			resp, body := g.Do(t, req)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			e := decodeError(t, resp, body)
			if e.Error != tc.wantError {
				t.Errorf("error = %q, want %q", e.Error, tc.wantError)
			}
			// RFC 6749 §5.2: %x20-21 / %x23-5B / %x5D-7E.
			if i := strings.IndexFunc(e.ErrorDescription, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }); i >= 0 {
				t.Errorf("error_description %q has a character RFC 6749 §5.2 forbids", e.ErrorDescription)
			}
			if got := resp.Header.Get("Cache-Control"); !strings.Contains(got, "no-store") {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
			if tc.check != nil {
				tc.check(t, resp.Header)
			}
		})
	}
}

// TestEndpointsRefuseAsTheirRFCsSay: introspection without credentials is
// 401 with a challenge (RFC 7662 §2.1, §2.3), and endpoints that discovery
// advertises before they are built answer an error, never an empty 200.
func TestEndpointsRefuseAsTheirRFCsSay(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	tok := g.PasswordGrant(t, "demo", "demo")
	resp, body := g.PostForm(t, "introspection_endpoint", url.Values{"token": {tok.AccessToken}}, "", "")
	wantStatus(t, "introspection without credentials", resp, body, http.StatusUnauthorized)
	if e := decodeError(t, resp, body); e.Error != "invalid_client" || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("introspection without credentials: %q, WWW-Authenticate %q", e.Error, resp.Header.Get("WWW-Authenticate"))
	}
	for _, name := range []string{"end_session_endpoint", "check_session_iframe", "device_authorization_endpoint"} {
		resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.endpoint(t, name), nil))
		if resp.StatusCode != http.StatusNotImplemented {
			t.Errorf("%s: status %d, want 501: %s", name, resp.StatusCode, body)
		}
		decodeError(t, resp, body)
	}
}
