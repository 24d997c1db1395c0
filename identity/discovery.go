package identity

import (
	"net/http"
	"slices"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Endpoint paths under the issuer (docs/api-surface.md §2.1).
const (
	PathDiscovery       = "/.well-known/openid-configuration"
	PathJWKS            = "/.well-known/openid-configuration/jwks"
	PathAuthorize       = "/connect/authorize"
	PathToken           = "/connect/token"
	PathUserinfo        = "/connect/userinfo"
	PathEndSession      = "/connect/endsession"
	PathCheckSession    = "/connect/checksession"
	PathRevocation      = "/connect/revocation"
	PathIntrospection   = "/connect/introspect"
	PathDeviceAuthorize = "/connect/deviceauthorization"
)

// Discovery is the OpenID Provider metadata document (docs/api-surface.md §2.1,
// OpenID Connect Discovery 1.0 §3).
type Discovery struct {
	Issuer                             string   `json:"issuer"`
	JWKSURI                            string   `json:"jwks_uri"`
	AuthorizationEndpoint              string   `json:"authorization_endpoint"`
	TokenEndpoint                      string   `json:"token_endpoint"`
	UserinfoEndpoint                   string   `json:"userinfo_endpoint"`
	EndSessionEndpoint                 string   `json:"end_session_endpoint"`
	CheckSessionIframe                 string   `json:"check_session_iframe"`
	RevocationEndpoint                 string   `json:"revocation_endpoint"`
	IntrospectionEndpoint              string   `json:"introspection_endpoint"`
	DeviceAuthorizationEndpoint        string   `json:"device_authorization_endpoint"`
	FrontchannelLogoutSupported        bool     `json:"frontchannel_logout_supported"`
	FrontchannelLogoutSessionSupported bool     `json:"frontchannel_logout_session_supported"`
	BackchannelLogoutSupported         bool     `json:"backchannel_logout_supported"`
	BackchannelLogoutSessionSupported  bool     `json:"backchannel_logout_session_supported"`
	ScopesSupported                    []string `json:"scopes_supported"`
	ClaimsSupported                    []string `json:"claims_supported"`
	GrantTypesSupported                []string `json:"grant_types_supported"`
	// RFC 9396 §10: the authorization_details types the server
	// understands, market-data entitlements (docs/entitlements.md).
	AuthorizationDetailsTypesSupported []string `json:"authorization_details_types_supported"`
	ResponseTypesSupported             []string `json:"response_types_supported"`
	ResponseModesSupported             []string `json:"response_modes_supported"`
	TokenEndpointAuthMethodsSupported  []string `json:"token_endpoint_auth_methods_supported"`
	IDTokenSigningAlgValuesSupported   []string `json:"id_token_signing_alg_values_supported"`
	SubjectTypesSupported              []string `json:"subject_types_supported"`
	CodeChallengeMethodsSupported      []string `json:"code_challenge_methods_supported"`
	RequestParameterSupported          bool     `json:"request_parameter_supported"`
	// What OpenID Connect Discovery §3 would otherwise default wrongly
	// (request_uri_parameter_supported defaults to true), and RFC 9207.
	RequestObjectSigningAlgValuesSupported []string `json:"request_object_signing_alg_values_supported"`
	RequestURIParameterSupported           bool     `json:"request_uri_parameter_supported"`
	ClaimsParameterSupported               bool     `json:"claims_parameter_supported"`
	AuthorizationResponseIssParameter      bool     `json:"authorization_response_iss_parameter_supported"`
	PromptValuesSupported                  []string `json:"prompt_values_supported"`
	// The authentication classes a request may ask for with acr_values
	// (RFC 9470), and that tokens carry in acr.
	ACRValuesSupported []string `json:"acr_values_supported"`
}

// newDiscovery is the document of issuer with scopes, whose ID tokens are
// signed with one of algs (the signing keys' algorithms).
func newDiscovery(issuer string, scopes, algs []string) Discovery {
	return Discovery{
		Issuer:                             issuer,
		JWKSURI:                            issuer + PathJWKS,
		AuthorizationEndpoint:              issuer + PathAuthorize,
		TokenEndpoint:                      issuer + PathToken,
		UserinfoEndpoint:                   issuer + PathUserinfo,
		EndSessionEndpoint:                 issuer + PathEndSession,
		CheckSessionIframe:                 issuer + PathCheckSession,
		RevocationEndpoint:                 issuer + PathRevocation,
		IntrospectionEndpoint:              issuer + PathIntrospection,
		DeviceAuthorizationEndpoint:        issuer + PathDeviceAuthorize,
		FrontchannelLogoutSupported:        true,
		FrontchannelLogoutSessionSupported: true,
		BackchannelLogoutSupported:         true,
		BackchannelLogoutSessionSupported:  true,
		ScopesSupported:                    scopes,
		ClaimsSupported: []string{"sub", "updated_at", "locale", "zoneinfo", "birthdate", "gender", "website",
			"picture", "profile", "preferred_username", "nickname", "middle_name", "given_name", "family_name",
			"name", "email", "email_verified", "role", "acr", "amr", "auth_time"},
		GrantTypesSupported: []string{oauth.GrantAuthorizationCode, oauth.GrantClientCredentials, oauth.GrantRefreshToken,
			oauth.GrantImplicit, oauth.GrantPassword, oauth.GrantDeviceCode},
		AuthorizationDetailsTypesSupported: []string{entitle.DetailType},
		ResponseTypesSupported: []string{"code", "token", "id_token", "id_token token", "code id_token",
			"code token", "code id_token token"},
		ResponseModesSupported:            []string{"form_post", "query", "fragment"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		IDTokenSigningAlgValuesSupported:  slices.Clone(algs),
		SubjectTypesSupported:             []string{"public"},
		CodeChallengeMethodsSupported:     []string{"plain", "S256"},
		RequestParameterSupported:         true,
		// Request objects: unsigned, or signed with a key the client
		// registers (no HMAC: client secrets are kept only as hashes).
		RequestObjectSigningAlgValuesSupported: []string{"none", "RS256", "ES256"},
		AuthorizationResponseIssParameter:      true,
		PromptValuesSupported:                  []string{"none", "login", "consent", "select_account"},
		ACRValuesSupported:                     slices.Clone(oauth.ACRValuesSupported),
	}
}

// serveDiscovery answers GET and HEAD with the precomputed document.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(s.discovery)
}

// serveJWKS answers GET and HEAD with the keys published now.
func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	if !allowGet(w, r) {
		return
	}
	body, err := s.keys.JWKS(s.cfg.Now())
	if err != nil {
		s.failer("jwks").Fail(w, r, "", "", oauth.ServerError(err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}

func allowGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	oauth.WriteError(w, oauth.MethodNotAllowed("method not allowed"), false)
	return false
}
