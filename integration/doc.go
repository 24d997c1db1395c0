// Package integration holds black-box tests of Gatehouse: each test starts
// the real gatehouse binary (built once by TestMain) with the demo
// configuration, Caddyfile.example, on free loopback ports and a private data
// directory, and talks to it only over HTTP with third-party clients
// (golang.org/x/oauth2, github.com/coreos/go-oidc/v3, and openid-client under
// Node in node/), plus hand-built requests where the interface document shows
// the exact request. Some tests write a variant of the demo configuration:
// every log on (for the log checks), or, in identity_remote_jwks_test.go, a second
// gatehouse that guards a route with the first one's tokens, checked
// against its JWKS over HTTP, across a key rotation made with the CLI.
//
// It imports no package of this module: what it knows of Gatehouse is the
// interface document, DESIGN.md's demo contract and the demo files.
//
// The Node tests need node and npm; it runs `npm ci` in node/ when
// node_modules is missing, and fails (never skips) when either is missing.
package integration
