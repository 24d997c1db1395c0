// Package caddymodule plugs Gatehouse into Caddy: the gatehouse app (the
// identity server with its store and users, and the access-token verifier,
// in-process or of a remote issuer), the gatehouse_identity handler that
// serves the identity server, the gatehouse_auth handler that protects any
// route with an access token, the gatehouse global option and the two
// directives, the pool that shares an open store across reloads, and the
// Prometheus metrics (through Caddy's metrics registry).
//
// Files by concern: app.go (the app's fields and lifecycle), verifier.go
// (the app's access-token verifier, its own or of a remote issuer),
// config.go (the nested configuration types and their conversion into the
// core's configuration), validate.go (the app's Validate), encryption_key.go,
// store.go (StoreOpener and the pool), metrics.go, caddyfile.go (the global
// option), and one file per handler with its Caddyfile next to it.
//
// Module families live in sub-packages that see the app only through its
// exported methods: sqlitestore (gatehouse.stores.sqlite), cli (the
// `gatehouse user|client|keys` commands); internal/cfutil is the one
// Caddyfile block parser of them all. This package imports none of them
// (the default store is named as raw JSON); the repository's root package
// imports them all, so that xcaddy registers every module.
//
// It is the only package of the module that imports Caddy, and it holds no
// protocol logic: it turns configuration into the plain structs of the core
// packages (identity, identity/store/...), builds them, and ties their
// lifecycle to Caddy's. What must outlive one configuration (an open store)
// sits in a reference-counted caddy.UsagePool, so that on a reload the new
// configuration shares it with the old one.
package caddymodule
