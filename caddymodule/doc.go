// Package caddymodule plugs Gatehouse into Caddy: the gatehouse app (the
// identity server with its store and users), the gatehouse_identity HTTP
// handler, their Caddyfile global option and directive, the store modules of
// the gatehouse.stores namespace, and the gatehouse CLI subcommands.
//
// It is the only package of the module that imports Caddy, and it holds no
// protocol logic: it turns configuration into the plain structs of the core
// packages (identity, identity/store/...), builds them, and ties their
// lifecycle to Caddy's. What must outlive one configuration (an open store)
// sits in a reference-counted caddy.UsagePool, so that on a reload the new
// configuration shares it with the old one.
package caddymodule
