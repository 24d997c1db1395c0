// Package wshandler is the Caddy glue of the message gateway: the
// http.handlers.gatehouse_ws module, which builds a wsauth.Gateway from its
// configuration, fills the gateway's Verifier and PasswordChecker from the
// gatehouse app, sets the identity headers of the backend leg through
// verify's header policy, counts in Prometheus, and keeps the gateway and
// its live sockets across config reloads where it can (reload.go: the new
// config's handler takes the gateway and reconfigures it), draining them
// with 1012 over the drain window where it cannot, and on exit.
//
// The gateway itself (wsauth) imports nothing of Caddy; this package is
// its only Caddy-facing part.
package wshandler
