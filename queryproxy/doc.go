// Package queryproxy is the query service: it takes a statement (IQL text, or a structured
// select or insert), authorizes it per table and column, hands it to an engine and streams
// the rows back as JSON.
//
// This package owns the contract between the query handler and the engines:
//
//   - Engine and Rows (engine.go): what an engine offers. SQL engines take parameterized
//     statements from package sqlgen, report their catalog, run reads on read-only
//     connections under a statement time limit, and run writes in one transaction.
//   - The engine errors (errors.go): ErrConstraint, ErrTimeout, ErrCanceled and
//     ErrUnavailable, which every engine wraps around its driver's errors so that the
//     handler chooses a status without knowing the driver.
//   - The result writer (result.go, resultjson.go): the JSON shape of a result, streamed
//     with bounded memory, with a row limit that never truncates silently.
//
// Engines live in sub-packages (sqliteengine, pgengine) and import this package; this
// package never imports them. It must not depend on Caddy: caddymodule wires an engine to
// the handler.
// It depends on sqlgen for the types the engines and sqlgen share (Catalog, Statement,
// Dialect, Type), and on nothing that talks to a database.
package queryproxy
