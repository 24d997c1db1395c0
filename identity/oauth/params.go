package oauth

// Grant types (RFC 6749 §4, RFC 8628).
const (
	GrantPassword          = "password"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	GrantAuthorizationCode = "authorization_code"
	GrantImplicit          = "implicit"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// GrantTypes are the grant types a client may be registered for.
var GrantTypes = []string{
	GrantPassword, GrantRefreshToken, GrantClientCredentials,
	GrantAuthorizationCode, GrantImplicit, GrantDeviceCode,
}

// KnownGrant reports whether g is one of GrantTypes.
func KnownGrant(g string) bool {
	for _, k := range GrantTypes {
		if g == k {
			return true
		}
	}
	return false
}

// Scopes with a meaning to the server itself.
const (
	ScopeOpenID        = "openid"
	ScopeProfile       = "profile"
	ScopeEmail         = "email"
	ScopeRoles         = "roles"
	ScopeOfflineAccess = "offline_access"
)

// Token types for the JWT "typ" header.
const (
	TypeAccessToken = "at+jwt" // RFC 9068 §2.1
	TypeIDToken     = "JWT"
)
