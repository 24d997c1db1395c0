// Package iqengine is the query service's iq engine, an engine.Forwarder: it hands each
// statement, re-printed as canonical IQL by the handler, to the platform's own query
// service (docs/protocol.md, "Query service (IQ)") with the caller's token and
// Request-Id, and reads its answer as it arrives, checking its shape, to rebuild the
// result from it.
//
// It is the query service's third target, beside the SQL of sqlgen: the handler
// authorizes a statement as for any engine, resolves its names against the configured
// catalog (sqlgen.Resolve) and prints it (iql.Format); this package owns what is the
// upstream's:
//
//   - check.go: the upstream's grammar, narrower than the service's language (Check);
//   - engine.go: the request (Forward, its insert and its select), the upstream's
//     refusals and failures as engine errors;
//   - answer.go: a select's answer, read as it arrives and checked against the columns
//     asked, so that a result's memory is a row's whatever the answer's size.
//
// It imports engine, sqlgen (the catalog's types), iql (the statement Check reads) and
// internal/contain, no database driver, nothing of the handler (queryproxy) and nothing of
// Caddy.
package iqengine
