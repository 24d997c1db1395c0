// Package logout ends login sessions and tells the relying parties: the
// end-session endpoint (OpenID Connect RP-Initiated Logout 1.0) with its
// confirmation page, front-channel logout (iframes of the logged-out page,
// OpenID Connect Front-Channel Logout 1.0), back-channel logout (signed
// logout tokens POSTed off the request path, OpenID Connect Back-Channel
// Logout 1.0), the revocation of a session's refresh-token families for
// the clients that ask for it, and the check-session iframe (OpenID
// Connect Session Management 1.0).
//
// It builds on identity/session (the session and its browser state),
// identity/tokens (logout tokens, revocation), identity/clients,
// identity/web, identity/verify (an id_token_hint, expired or not),
// identity/store and the oauth vocabulary; it imports no other endpoint
// package and nothing of Caddy.
package logout
