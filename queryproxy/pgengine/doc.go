// Package pgengine is the PostgreSQL query engine of the query service: a
// engine.Engine over one schema of a PostgreSQL database, through a bounded pool of
// pgx connections (github.com/jackc/pgx/v5/pgxpool).
//
// # Connections and transactions
//
// The pool holds at most Config.MaxConns connections; a statement beyond them waits for
// one, under its time limit. Every statement runs in a transaction of its own, which sets,
// for that transaction only, the statement time limit and the search path (pg_catalog, the
// schema, pg_temp: built-in functions and operators cannot be shadowed by the schema's,
// nor the schema's tables by temporary ones):
//
//	BEGIN READ ONLY; SET LOCAL statement_timeout = 5000; SET LOCAL search_path = ...
//
// A read is one round trip: BEGIN, the settings, the statement and ROLLBACK go in one
// pipeline, as statements prepared once per connection (read.go). A write's transaction
// is opened by one simple query, then its statements, then COMMIT.
//
// Reads (Query) run in a READ ONLY transaction, which PostgreSQL keeps from writing
// anything: INSERT, UPDATE, DELETE, DDL, nextval, SELECT ... FOR UPDATE all fail. It is
// rolled back when the Rows are closed, so that even a setting a statement changed is
// undone, and a statement that ends the transaction itself (a COMMIT sent as the
// statement) is reported as an error. Writes (Exec) run all their statements in one READ
// WRITE transaction: all of them or none. Every statement goes through the extended
// protocol (pgx's Query), which takes exactly one statement, never several.
//
// # Time limits and cancellation
//
// Every statement runs under Config.StatementTimeout twice over: the engine's context for
// the statement (covering a Query's rows and an Exec's whole transaction) and the
// server's statement_timeout. When the context ends first (the time limit, or the caller
// going away: an HTTP client that closed its connection), pgx sends PostgreSQL a cancel
// request at once, on a connection of its own, and the statement stops on the server (the
// backend does not run on to the end of a long query). The engine waits up to two seconds
// for the server to confirm; only then is the connection back in the pool (so the pool's
// bound holds on the server too), and if the server does not answer, the connection is
// closed instead. (pgx's default would close the connection at once and send the cancel
// request in the background.)
//
// # Errors
//
// Errors wrap the sentinels of package engine (errors.go): SQLSTATE class 23
// (integrity constraint violation) is ErrConstraint; the caller's cancellation is
// ErrCanceled; the time limit, the caller's deadline, and 57014 query_canceled when no
// context ended (the server's statement_timeout) are ErrTimeout; a server that cannot be
// reached, a broken connection, SQLSTATE classes 08 (connection exception) and 53
// (insufficient resources), 57P01-57P05 (shutdown, cannot connect now), 55P03
// lock_not_available, 40001 and 40P01 (serialization failure, deadlock: another try may
// pass), and an engine that is closed are ErrUnavailable. A server error's text keeps its
// SQLSTATE and the names of the table, column and constraint, but not PostgreSQL's
// message, which can quote a value (the engine's errors are logged; values must not be):
// only for classes 08, 0A, 42, 53 and 57, whose messages name SQL, objects or the
// server's state, is the message kept.
//
// The DSN is never logged nor put in an error, as it may hold a password: the engine names
// its server as user@host:port/database, and replaces pgx's error for a DSN it cannot
// parse (which masks the password only on a best-effort basis) by a fixed one.
//
// # Types
//
// The result Type of a column follows from its PostgreSQL type (a domain's base type):
//
//	text, varchar, char, name, "char"             -> String
//	smallint, integer, bigint                     -> Integer
//	numeric, real, double precision               -> Decimal
//	boolean                                       -> Boolean
//	timestamp, timestamptz, date, time, timetz    -> DateTime
//	bytea                                         -> Binary
//	anything else (uuid, json, jsonb, arrays,     -> String, the server's text of the value
//	enums, interval, money, inet, ...)
//
// A String column is compared by sqlgen's comparison rules whatever its type (textKind
// gives sqlgen.Column.Text): text, varchar and char(n) as themselves, uuid as itself but
// in a pattern, inet as abbrev's text, any other type as its text ("c"::text; name too,
// which a value compared with it as a name would be cut to 63 bytes).
//
// Values come back as follows (rows.go). numeric is read in PostgreSQL's text format and
// returned as an engine.Decimal holding every digit the server printed: a numeric(12,4)
// 37.48 is "37.4800", and the result writer prints it as the JSON number 37.4800; it never
// passes through a float64 ('NaN' and, since PostgreSQL 14, 'Infinity' come back as
// strings). double precision is a float64; real is read as text, the shortest decimal
// that reads back as the same real, and parsed as a float64 (37.48, not
// 37.47999954223633). Integers are int64. timestamptz, timestamp (taken as UTC) and date
// (at midnight UTC) are a time.Time in UTC, written as RFC 3339; 'infinity' and
// '-infinity' are those strings. time and timetz are their text ("10:30:00"). bytea is
// []byte (base64 in JSON). The binary format is asked for the types whose binary form pgx
// decodes exactly; the text format for the rest.
//
// Bind arguments are bound by pgx as sqlgen makes them (string, int64, bool, nil; a number
// that is not an integer is text cast to numeric in the SQL); an engine.Decimal is
// bound as its text, a time.Time as a timestamp.
//
// # Catalog
//
// The catalog lists the schema's tables, partitioned tables, views, materialized views
// and foreign tables (not partitions, not relations named like one of pg_catalog), each
// with its columns in order, from pg_catalog. It is read at Open and cached; at most once
// per Config.CatalogCheckInterval a Catalog call asks the server for a digest of the
// schema's tables, columns and types (one row, a SHA-256 computed by the server) and reads
// the catalog again only when the digest changed.
//
// This package must not depend on Caddy (caddymodule wires it in); it imports engine,
// sqlgen, internal/contain, pgx and zap.
package pgengine
