// Package clients holds the registered OAuth clients and API resources:
// their configuration and its rules, each client's effective policy
// (grants, scopes, origins, lifetimes, redirect URIs, consent, PKCE and
// request-object keys), and client authentication (RFC 6749 §2.3) in
// constant time.
//
// It imports only the oauth vocabulary and verify's JWK Set parser; the
// token endpoint, introspection, revocation and the browser flows consult
// it.
package clients
