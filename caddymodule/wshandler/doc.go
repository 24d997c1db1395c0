// Package wshandler is the Caddy glue of the message gateway: the
// http.handlers.gatehouse_ws module, which builds a wsauth.Gateway from its
// configuration, fills the gateway's Verifier and PasswordChecker from the
// gatehouse app, sets the identity headers of the backend leg through
// verify's header policy, counts in Prometheus, and closes live sockets on
// reload (1012, after a delay) and on exit (1001).
//
// The gateway itself (wsauth) imports nothing of Caddy; this package is
// its only Caddy-facing part.
package wshandler
