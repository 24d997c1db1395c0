// Package enginetest is the conformance suite of the query service's engines: every
// engine's tests run it in a few lines, so that every engine is held to the same
// expected results (as identity/store/storetest does for the identity store's backends).
//
// Run takes an SQL engine (engine.Engine) and checks, on a new database holding the
// demo's tables and rows (examples/querydb) and the suite's own (Schema):
//
//   - Operators: every operator of the language, as package sqlgen writes it, with the
//     comparison rules that must hold on every engine (Operators);
//   - Catalog: the tables and columns with their types, generated columns marked, and the
//     catalog cache (served for its check interval, read again only after a change of
//     schema);
//   - Values: Go values bound as the engine binds them (a time, a Decimal, a bool);
//   - Writes: every kind of constraint is ErrConstraint, Exec is atomic, reads and writes
//     run at once;
//   - Limits: the statement time limit on a read (before its first row and between
//     rows) and on a write, the caller's cancellation and deadline;
//   - ReadOnly: a write sent through Query fails and changes nothing;
//   - Closed: a closed engine is ErrUnavailable; Trace sees the statements run;
//   - Venues: the venue filter (sqlgen.Venue) shows each caller of VenueCases the rows of
//     its venues, compared exactly, whatever an OR, a NOT or a venue's variants in the
//     condition try, in updates and deletes too, in a parallel burst.
//
// RunForwarder takes an engine.Forwarder whose upstream holds the same database, and
// checks its catalog, the operators as canonical IQL, an insert and its conflict, and
// the venue filter written in IQL where the Forwarder's grammar takes it.
//
// Statements the suite sends as SQL are written so that SQLite and PostgreSQL both read
// them (quoted identifiers, the dialect's placeholders). What an engine does beyond the
// contract (its types, its listing rules, its pool, a server-side cancel) stays in its
// own tests.
//
// It is imported only by tests. It imports package engine, sqlgen and iql, nothing of
// the handler (queryproxy) or of an engine, and nothing of Caddy.
package enginetest
