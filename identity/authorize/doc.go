// Package authorize is the authorization endpoint, GET|POST
// /connect/authorize (RFC 6749 §3.1, OpenID Connect Core §3), with the
// login and consent pages it leads through (POST /connect/login, POST
// /connect/consent).
//
// A request is checked in two stages. The client and its redirect URI come
// first: an unknown client or a redirect URI the client has not registered
// is shown on an error page and never redirected to. Every later error goes
// back to that redirect URI as the specifications say (query, fragment or
// form_post, with state and iss). Then: a login unless the browser's
// session fits (prompt, max_age), consent where the client requires it,
// and the response: a code (bound to client, redirect URI and PKCE
// challenge), an access token, an ID token, or a mix (every response type
// of OpenID Connect Core §3 and the Multiple Response Types practices).
//
// Between the pages the request travels sealed (AES-256-GCM under a server
// secret, bound to the step and short-lived), so that nothing of it is
// stored and the login form cannot be turned into another request. The
// forms carry anti-forgery tokens bound to the browser (session.Guard) and
// refuse posts from another site.
//
// A request for a scope that needs a second factor, or for the
// multi-factor class in acr_values (RFC 9470), from a session that passed
// one factor leads through the second-factor form (POST
// /connect/login/factor) when the user has a factor to pass: a right code
// elevates the session (a new cookie, amr with "otp" and "mfa"), and so
// does one of the user's passkeys (amr with "hwk" and "mfa"). The login
// form also offers a usernameless passkey: the session starts with the
// passkey's methods, two factors when the authenticator verified the
// user.
//
// It imports the domain packages (clients, tokens, users, factors,
// store), the session and web packages, the oauth vocabulary and verify
// (an id_token_hint is one of our ID tokens); no other endpoint package.
package authorize
