// Package verify is Gatehouse's one access-token check, shared by route
// protection, userinfo, the message service and the query service: a
// verified-token cache, then the signature against a configured key set
// (the in-process identity server's, or a remote issuer's JWKS), pinned
// algorithms, typ, issuer, audience, exp/nbf with a small leeway, and
// optionally revocations, giving an Identity or an *Error typed by reason.
//
// Keys come only from the configured key set, never from a token's own
// jku, jwk, x5u or x5c header: a token carrying one is refused.
//
// This package must not depend on Caddy or on the identity server itself;
// the server is one KeySource among others.
package verify
