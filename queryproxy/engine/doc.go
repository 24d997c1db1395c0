// Package engine is the contract between the query handler (package queryproxy) and the
// engines that run its statements, as database/sql/driver is database/sql's:
//
//   - Engine and Rows (engine.go): what an SQL engine offers. It takes parameterized
//     statements from package sqlgen, reports its catalog, runs reads on read-only
//     connections under a statement time limit, and runs writes in one transaction.
//     RowChecker, Pooled and Pinger are what an engine may offer besides.
//   - Forwarder (forwarder.go): an engine that takes IQL itself and hands it on to an
//     upstream query service (the iq engine), and says which statements its upstream
//     takes.
//   - The errors (errors.go): ErrConstraint, ErrTimeout, ErrCanceled, ErrInvalidValue and
//     ErrUnavailable, which every engine wraps around its driver's errors, and a
//     Forwarder's ErrBadGateway, ErrUpstreamRefused (UpstreamError) and ErrFateUnknown, so
//     that the handler chooses a status without knowing the driver or the upstream.
//   - Decimal, the exact decimal value an engine may return.
//   - CatalogCache (catalogcache.go): the catalog an SQL engine read last, checked against
//     the schema's version at most once per interval, which the engines share.
//
// It imports the standard library, package sqlgen (for Statement, Dialect, Catalog and
// Column) and package iql (the statement a Forwarder checks), and nothing else: neither the
// handler nor an engine nor a driver nor Caddy (queryproxy/deps_test.go fails otherwise).
// Package enginetest holds the conformance suite every engine's tests run.
package engine
