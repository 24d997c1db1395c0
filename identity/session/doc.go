// Package session is the browser's side of the identity server: the login
// session (an HttpOnly, SameSite=Lax cookie holding a random secret, Secure
// when the issuer is https; the session itself in the store under the
// secret's SHA-256, so it survives a restart and is shared by instances),
// the pre-login cookie that anti-forgery tokens are bound to before there
// is a session, the tokens themselves (an HMAC with a server secret over
// the cookie they are bound to), and the check that refuses a form posted
// from another site (Origin, Sec-Fetch-Site).
//
// It imports only the store's roles from identity; it knows nothing of
// OAuth or of the pages.
package session
