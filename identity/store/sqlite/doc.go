// Package sqlite is the embedded SQLite backend of store.Store, the default
// for a single gatehouse instance. It uses modernc.org/sqlite (no cgo).
//
// One database file holds everything. Open creates it (its directory 0700, the
// file 0600), switches it to WAL and brings its schema up to date: the
// schema_version table records which of the ordered migrations in migrate.go
// have run, each in its own transaction. New tables are added by appending a
// migration, never by editing one that has shipped.
//
// Writes never fail with "database is locked": a Store writes through one
// connection whose transactions start with BEGIN IMMEDIATE, so they take the
// write lock before they read; writers in other processes (a CLI editing
// users while the server runs) are waited for under a busy timeout. The
// transactional writes of a Store go through one goroutine, which commits
// those waiting at the time together, in one transaction with one sync to
// disk, each inside a savepoint of its own (group commit, see write.go): a
// write succeeds or fails alone, as if it had its own transaction, and its
// caller hears of it only once it has committed. Each commit is synced to
// disk before it is acknowledged (synchronous FULL) unless WithSynchronous
// says otherwise. Reads go through a separate pool of read-only connections,
// which WAL lets run alongside the writer. The statements of the token
// endpoint's hot paths are prepared once, at Open (prepared.go).
//
// Times are stored as integer Unix milliseconds (NULL for the zero time) and
// returned in UTC; lists of strings as JSON arrays.
//
// This package must not depend on Caddy or on net/http; it depends only on
// package store, the driver, internal/sqlitefile (the file and the writer's
// settings, as the query service's SQLite engine's) and internal/contain.
package sqlite
