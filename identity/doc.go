// Package identity is the OAuth 2.0 / OpenID Connect identity server:
// Server, its Config, the route table, discovery and the JWKS, and the
// token services around the token endpoint (userinfo, introspection,
// revocation). The browser flows are served when the store is also a
// store.BrowserStore (browser.go); otherwise their endpoint answers 501.
// NewServer builds the packages below from one Config and routes to their
// handlers:
//
//	oauth     wire vocabulary (errors, form, scopes, Basic, CORS)
//	clients   registered clients and API resources, client authentication
//	users     password hashing, the users file, the password Checker
//	factors   second factors: TOTP enrolment and checks, recovery codes
//	keys      signing-key lifecycle, sealing, JWKS, signing
//	tokens    claims, minting, refresh-token families, codes
//	grant     the token endpoint, one file per grant
//	authorize the authorization endpoint, its login and consent forms
//	device    the device authorization endpoint and its verification page
//	account   the user's security page: second factors
//	logout    end-session, front- and back-channel logout, check-session
//	session   the login session's cookie and store, anti-forgery tokens
//	web       the embedded HTML pages
//	store     the Store interface (role interfaces), BrowserStore, backends
//	verify    the one access-token check
//
// It may import every package above, and nothing of Caddy: caddymodule is
// the glue. Only caddymodule, cmd and bench import it. (Its row of the
// import table, identity/deps_test.go, which docs/architecture.md shows;
// each package's doc gives its own row.)
package identity
