// Package tokens is what the identity server mints and how it lives:
// access-token and ID-token claims (RFC 9068, OpenID Connect Core), minting
// with the keys package's signer, and refresh-token families (rotation as
// one compare-and-swap, the grace window's derived successor, replay
// revoking the family), authorization codes (code.go: one use, bound to
// client, redirect URI and PKCE, a replay revoking what the first use
// issued) and the front channel's issuance (frontchannel.go). Device codes
// will join it.
//
// Both front doors that mint (the token endpoint and, for implicit and
// hybrid responses, the authorization endpoint) call it; it imports keys,
// clients, oauth and the store's roles, never an endpoint package.
package tokens
