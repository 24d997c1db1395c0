// Package oauth is the OAuth 2.0 and OpenID Connect wire vocabulary that
// every identity endpoint speaks: error values and their RFC 6749 §5.2
// bodies, the request form (RFC 6749 §3.2), scope parsing (§3.3), Basic
// client credentials (§2.3.1), response headers and CORS.
//
// It is a leaf: it imports nothing from identity.
package oauth
