// Package integration holds black-box tests of Gatehouse: each test starts
// the real gatehouse binary (built once by TestMain) with the demo
// configuration, Caddyfile.example, on free loopback ports and a private data
// directory, and talks to it only over HTTP with third-party clients
// (golang.org/x/oauth2, github.com/coreos/go-oidc/v3, and openid-client under
// Node in node/), plus hand-built requests where the interface document shows
// the exact request. Some tests run a variant of the demo configuration:
// every log on (for the log checks), one more client (for a reload), or, in
// identity_remote_jwks_test.go, a second gatehouse that guards a route with
// the first one's tokens, checked against its JWKS over HTTP, across a key
// rotation made with the CLI.
//
// It imports no package of this module: what it knows of Gatehouse is the
// interface document, docs/design.md's demo contract and the demo files. Its
// tests are the reference copy of the contracts with the specifications
// (the discovery document's lists, the token endpoint's error table): keep
// them complete.
//
// Every test runs in parallel with the others (bounded by go test's
// -parallel, GOMAXPROCS by default): no two gatehouse processes share a
// port or a data directory, and each is stopped by its own pid. Every wait
// is bounded by a named constant in harness_test.go.
//
// Files:
//   - harness_*_test.go: the processes. harness_test.go starts, restarts,
//     reloads and stops gatehouse and runs its CLI; harness_ports_test.go
//     gives each process ports of its own; harness_leaks_test.go checks
//     every log for secrets; harness_node_test.go runs the Node scripts;
//     harness_postgres_test.go gives a test a database of its own on the
//     PostgreSQL of GATEHOUSE_TEST_POSTGRES (or skips, saying why), starts
//     two processes on it, or runs a cluster of the test's own;
//     harness_pgproxy_test.go is the proxy that breaks the connections
//     to it.
//   - client_*_test.go: the requests, and the decoding of the answers
//     (client_jwt_test.go for tokens, client_guard_test.go for a guarded
//     route, client_mfa_test.go for the tokens that need a second factor:
//     trader's through the code flow with a TOTP code, the trading desk's).
//   - configs_test.go: the configurations, Caddyfile.example and its named
//     variants.
//   - identity_*_test.go: the tests of the identity server, one file per
//     capability; multi_*_test.go, several instances on one PostgreSQL
//     store (tokens, live revocations, an outage); ws_*_test.go, the
//     message gateway's (gorilla/websocket,
//     and npm's ws in node/ws.test.mjs). The query service's will be
//     query_*_test.go.
//
// The Node tests need node and npm; it runs `npm ci` in node/ when
// node_modules is missing, and fails (never skips) when either is missing.
package integration
