// Package clients holds the registered OAuth clients and API resources:
// their configuration and its rules, each client's effective policy
// (grants, scopes, origins, lifetimes), and client authentication
// (RFC 6749 §2.3) in constant time.
//
// It imports only the oauth vocabulary and the standard library; the token
// endpoint, introspection, revocation and the browser flows consult it.
package clients
