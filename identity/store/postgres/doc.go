// Package postgres is the PostgreSQL backend of store.Store, for several
// gatehouse instances sharing one database. It uses pgx (a bounded
// pgxpool) and mirrors the semantics of the embedded SQLite backend
// exactly; both pass the storetest conformance suite.
//
// Open connects and brings the schema up to date: the schema_migrations
// table records which of the ordered migrations in migrate.go have run,
// each in its own transaction that first takes a transaction-scoped
// advisory lock (pg_advisory_xact_lock), so that of several instances
// starting at once on one database one migrates and the others wait, then
// find the schema at its version. New tables are added by appending a
// migration, never by editing one that has shipped.
//
// Races between instances are settled by PostgreSQL, never by a read in Go
// followed by a write: a refresh-token rotation is one UPDATE whose WHERE
// is the compare-and-swap (of concurrent rotations from one generation the
// row lock lets exactly one match); a legacy conversion locks its token and
// family rows with SELECT ... FOR UPDATE; a failure count is one INSERT
// ... ON CONFLICT DO UPDATE computing the window, the count and the lock
// from the row it locked, and a refund one UPDATE. Transactions run at
// READ COMMITTED and are retried whole on a serialization failure or a
// deadlock (see tx.go).
//
// Revocations reach the other instances at once (notify.go): each one
// NOTIFYs the channel gatehouse_revocations in the transaction that writes
// it, and one connection per Store, outside the pool, LISTENs and passes
// the notices to the verifiers (store.RevocationNotifier), reconnecting
// with a growing pause when it loses the server. Config.DisableNotify
// turns both off for engines without LISTEN/NOTIFY; the verifiers' poll
// then does alone what it otherwise backs up.
//
// Every statement's outcome says whether the database was reachable
// (health.go, db.go): an unreachable one fails with an error matching
// store.ErrUnavailable, and the outages this process saw are kept
// (store.Outages), for a refresh whose answer an outage swallowed.
//
// Times are timestamptz, truncated to the millisecond before they are
// stored (as the SQLite backend stores Unix milliseconds), NULL for the zero
// time, and returned in UTC; lists of strings are text[]; identifiers and
// keys are text COLLATE "C", so that they order and compare byte by byte,
// except failure-counter keys, which are bytea (they hold a NUL).
//
// The DSN's password never reaches a log or an error: Open logs the host,
// port, database and user only, and errors of parsing or connecting are
// reworded or scrubbed (see dsn.go).
//
// This package must not depend on Caddy or on net/http; it depends only on
// package store, pgx and zap.
package postgres
