// Package caddymodule plugs Gatehouse into Caddy: the gatehouse app (the
// identity server with its store and users, and the access-token verifier,
// in-process or of a remote issuer), the gatehouse_identity handler that
// serves the identity server, the gatehouse_auth handler that protects any
// route with an access token, their Caddyfile global option and directives,
// the store modules of the gatehouse.stores namespace, the Prometheus
// metrics (through Caddy's metrics registry), and the gatehouse CLI
// subcommands (user, client, keys).
//
// It is the only package of the module that imports Caddy, and it holds no
// protocol logic: it turns configuration into the plain structs of the core
// packages (identity, identity/store/...), builds them, and ties their
// lifecycle to Caddy's. What must outlive one configuration (an open store)
// sits in a reference-counted caddy.UsagePool, so that on a reload the new
// configuration shares it with the old one.
package caddymodule
