package integration

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// specRequest builds a token request as interface.md §4.2 shows it: the
// form fields in the order shown, Accept, Content-Type and Content-Length.
func specRequest(t testing.TB, g *Gatehouse, body string) *http.Request {
	t.Helper()
	req := mustRequest(t, http.MethodPost, g.TokenEndpoint(t), strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	req.ContentLength = int64(len(body))
	return req
}

// checkSpecResponse checks a §2.2 body and the §4.2 headers.
func checkSpecResponse(t testing.TB, resp *http.Response, body []byte) tokenResponse {
	t.Helper()
	tok := decodeToken(t, resp, body)
	for name, want := range map[string]string{
		"Cache-Control":   "no-store, no-cache, max-age=0",
		"Pragma":          "no-cache",
		"Referrer-Policy": "no-referrer",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no Strict-Transport-Security header")
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}

	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"access_token", "expires_in", "token_type", "refresh_token", "scope"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("the response has no %s", name)
		}
	}
	if n, err := tok.ExpiresIn.Int64(); err != nil || n != 3600 {
		t.Errorf("expires_in = %s, want the integer 3600", tok.ExpiresIn)
	}
	if tok.TokenType != "Bearer" {
		t.Errorf("token_type = %q, want Bearer", tok.TokenType)
	}
	if strings.Count(tok.AccessToken, ".") != 2 {
		t.Error("access_token is not a compact JWT")
	}
	if tok.RefreshToken == "" {
		t.Error("no refresh_token, though offline_access is granted")
	}
	if !sameScopes(tok.Scope, demoScopes) {
		t.Errorf("scope = %q, want %q", tok.Scope, demoScopes)
	}
	return tok
}

// TestSpecPasswordThenRefresh sends §4.2 and then §4.3 exactly as shown.
func TestSpecPasswordThenRefresh(t *testing.T) {
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
			resp, body := g.Do(t, req)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			if e := decodeError(t, resp, body); e.Error != tc.wantError {
				t.Errorf("error = %q, want %q", e.Error, tc.wantError)
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
