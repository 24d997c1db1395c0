// Package pgstore is the gatehouse.stores.postgres module: the gatehouse
// store in a PostgreSQL database (identity/store/postgres), for several
// gatehouse instances sharing one store, and its Caddyfile syntax.
//
// It is caddy-dns-shaped: a module that names and opens a store, with no
// logic of its own. It depends on the caddymodule root package only for the
// StoreOpener interface; the root never imports it, so a binary gets this
// module by importing the package, as github.com/gatehouse/gatehouse does.
// It builds with any build tags: xcaddy's nopgx tag leaves out Caddy's own
// pgx-based modules, not this one.
package pgstore
