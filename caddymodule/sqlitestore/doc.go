// Package sqlitestore is the gatehouse.stores.sqlite module: the gatehouse
// store in an embedded SQLite database (identity/store/sqlite), the
// default store of the gatehouse app, and its Caddyfile syntax.
//
// It is caddy-dns-shaped: a module that names and opens a store, with no
// logic of its own. It depends on the caddymodule root package only for the
// StoreOpener interface; the root never imports it (the app names its
// default store as raw JSON), so a binary gets this module by importing
// the package, as github.com/gatehouse/gatehouse does.
package sqlitestore
