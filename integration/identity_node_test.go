package integration

import (
	"testing"
)

// TestNodeOpenIDClient runs node/oidc.test.mjs, which drives the server with
// openid-client v6: discovery, password grant, refresh, client credentials
// (client_secret_post and client_secret_basic).
func TestNodeOpenIDClient(t *testing.T) {
	t.Parallel()
	runNodeScript(t, StartGatehouse(t), "oidc.test.mjs")
}

// TestNodeTokenServices runs node/tokenservices.test.mjs, which drives the
// token services with openid-client v6: userinfo, introspection (RFC 7662)
// and revocation (RFC 7009) of refresh and access tokens. The tokens, the
// demo secret and the passwords must not reach the log.
func TestNodeTokenServices(t *testing.T) {
	t.Parallel()
	// The demo with every log on, so that the log check covers these flows
	// at their most verbose.
	g := StartGatehouseWith(t, Options{Config: verboseConfig(t, "verbose", "")})
	runNodeScript(t, g, "tokenservices.test.mjs")
}

// TestNodeAuthorizationCode runs node/authcode.test.mjs: openid-client v6's
// buildAuthorizationUrl and authorizationCodeGrant with PKCE, state, nonce
// and iss checks, the login form posted in between.
func TestNodeAuthorizationCode(t *testing.T) {
	t.Parallel()
	runNodeScript(t, StartGatehouse(t), "authcode.test.mjs")
}
