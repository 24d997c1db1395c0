// Package queryhandler is the Caddy glue of the query service: the
// http.handlers.gatehouse_query module, which builds a queryproxy.Handler
// over an engine guest module (gatehouse.query_engines.*), authenticates
// each request with the gatehouse app's verifier (RFC 6750 refusals) and
// counts in Prometheus; the gatehouse.query_engines.sqlite module, the
// embedded engine; and the gatehouse.query_engines.postgres module, a
// PostgreSQL database (queryproxy/pgengine).
//
// The service itself (queryproxy) imports nothing of Caddy; this package is
// its only Caddy-facing part.
package queryhandler
