package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestDiscoveryDocument checks every field of docs/api-surface.md §2.1 (§4.1).
func TestDiscoveryDocument(t *testing.T) {
	t.Parallel()
	g := StartGatehouse(t)
	resp, body := g.Do(t, mustRequest(t, http.MethodGet, g.Issuer+"/.well-known/openid-configuration", nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %s, want 200", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
		t.Errorf("Content-Type = %q, want %q", ct, "application/json; charset=UTF-8")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("discovery is not a JSON object: %v", err)
	}

	t.Run("issuer", func(t *testing.T) {
		var issuer string
		if err := json.Unmarshal(doc["issuer"], &issuer); err != nil || issuer != g.Issuer {
			t.Errorf("issuer = %s, want %q", doc["issuer"], g.Issuer)
		}
	})

	// The endpoint fields are absolute URLs under the issuer.
	for field, path := range map[string]string{
		"jwks_uri":                      "/.well-known/openid-configuration/jwks",
		"authorization_endpoint":        "/connect/authorize",
		"token_endpoint":                "/connect/token",
		"userinfo_endpoint":             "/connect/userinfo",
		"end_session_endpoint":          "/connect/endsession",
		"check_session_iframe":          "/connect/checksession",
		"revocation_endpoint":           "/connect/revocation",
		"introspection_endpoint":        "/connect/introspect",
		"device_authorization_endpoint": "/connect/deviceauthorization",
	} {
		t.Run(field, func(t *testing.T) {
			var got string
			if err := json.Unmarshal(doc[field], &got); err != nil || got != g.Issuer+path {
				t.Errorf("%s = %s, want %q", field, doc[field], g.Issuer+path)
			}
		})
	}

	for _, field := range []string{
		"frontchannel_logout_supported",
		"frontchannel_logout_session_supported",
		"backchannel_logout_supported",
		"backchannel_logout_session_supported",
		"request_parameter_supported",
	} {
		t.Run(field, func(t *testing.T) {
			var got bool
			if err := json.Unmarshal(doc[field], &got); err != nil || !got {
				t.Errorf("%s = %s, want true", field, doc[field])
			}
		})
	}

	for field, want := range map[string][]string{
		"scopes_supported": {"openid", "profile", "email", "roles", "Identity/Admin", "Service/Market",
			"Service/News", "Service/Trading", "Service/OrderPad", "Service/Admin", "offline_access"},
		"claims_supported": {"sub", "updated_at", "locale", "zoneinfo", "birthdate", "gender", "website",
			"picture", "profile", "preferred_username", "nickname", "middle_name", "given_name",
			"family_name", "name", "email", "email_verified", "role", "acr", "amr", "auth_time"},
		"acr_values_supported": {"https://refeds.org/profile/sfa", "https://refeds.org/profile/mfa"},
		"grant_types_supported": {"authorization_code", "client_credentials", "refresh_token", "implicit",
			"password", "urn:ietf:params:oauth:grant-type:device_code"},
		"response_types_supported": {"code", "token", "id_token", "id_token token", "code id_token",
			"code token", "code id_token token"},
		"response_modes_supported":              {"form_post", "query", "fragment"},
		"token_endpoint_auth_methods_supported": {"client_secret_basic", "client_secret_post"},
		"id_token_signing_alg_values_supported": {"RS256"},
		"subject_types_supported":               {"public"},
		"code_challenge_methods_supported":      {"plain", "S256"},
	} {
		t.Run(field, func(t *testing.T) {
			var got []string
			if err := json.Unmarshal(doc[field], &got); err != nil {
				t.Fatalf("%s = %s, want an array of strings", field, doc[field])
			}
			slices.Sort(got)
			w := slices.Sorted(slices.Values(want))
			if !slices.Equal(got, w) {
				t.Errorf("%s = %q, want %q (any order)", field, got, w)
			}
		})
	}
}
