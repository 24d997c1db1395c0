// Package queryproxy is the query service: it takes a statement (IQL text, or a structured
// select or insert), authorizes it per table and column, hands it to an engine and streams
// the rows back as JSON.
//
// This package owns:
//
//   - The handler (handler.go, config.go, headers.go, parse.go, structured.go, serve.go,
//     forward.go): its configuration, routes, CORS, Request-Id, the request's body, the
//     structured endpoints, and one failure path (queryerror.go) that maps the engines'
//     errors (package engine) to statuses without knowing the driver.
//   - The table policy (policy.go, venue.go): who may read and write which table, column
//     and row, a row's owner and, on a market-data table, its venue.
//   - The result writer (result.go, resultjson.go): the JSON shape of a result, streamed
//     with bounded memory, with a row limit that never truncates silently.
//   - A query's trace (trace.go): a span per query and one per step (parse, authorize,
//     engine), when the request's own span records, on that span's tracer provider.
//   - A query's audit record (audit.go): one per query, reads included (the caller, the
//     statement's kind, the table, the venues its filter allowed, the rows, the outcome),
//     never a value; queries refused while the audit cannot write.
//
// The contract with the engines (Engine, Rows, Forwarder, the errors) is package engine;
// the engines live in sub-packages (sqliteengine, pgengine, iqengine). This package imports
// engine, iql, sqlgen (for the types the engines and sqlgen share: Catalog, Statement,
// Dialect, Type), internal/contain, entitle (the caller's market-data entitlements,
// which a venue table's rows are filtered by) and audit (its records' kinds and
// attributes), never an engine and nothing that talks to a
// database. It must not depend on Caddy: caddymodule wires an engine to the handler, and
// only it and the benchmarks import this package. Of OpenTelemetry it imports the tracing
// API only, never the SDK. deps_test.go holds the import table of queryproxy's packages
// (docs/architecture.md shows it), and fails on an import outside it.
package queryproxy
