package engine

import (
	"context"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Forwarder is an engine that takes IQL itself: the platform's own query
// service (the iq engine). The handler asks Check whether the upstream takes
// the statement, authorizes it as for any engine, resolves its names against
// the Forwarder's configured catalog (sqlgen.Resolve), re-prints it as
// canonical IQL (iql.Format) and hands it on with the caller's token; the
// Forwarder checks the answer's shape.
type Forwarder interface {
	// Check reports what of stmt is outside the upstream's grammar (the
	// handler refuses it with 400, naming it, and nothing reaches the
	// upstream), or "" when the upstream takes it.
	Check(stmt iql.Statement) string
	// Catalog is the configured catalog: the tables and columns the
	// upstream serves.
	Catalog(ctx context.Context) (sqlgen.Catalog, error)
	// Forward sends one statement and returns the checked answer.
	Forward(ctx context.Context, req ForwardRequest) (*ForwardResult, error)
}

// ForwardRequest is one statement for a Forwarder.
type ForwardRequest struct {
	IQL       string          // canonical IQL, every name in the catalog's spelling
	Token     string          // the caller's access token (the upstream knows the user from it)
	RequestID string          // the request's Request-Id
	Write     bool            // an INSERT: the answer is {"RowsAffected": n}
	Columns   []sqlgen.Column // a select's columns, in order: the answer may hold no others
	MaxRows   int             // a select's row limit: an answer with more fails with queryproxy.ErrTooManyRows
}

// ForwardResult is a Forwarder's checked answer.
type ForwardResult struct {
	// Rows is a select's result, read from the upstream as it is written
	// (Columns the asked ones); the handler closes it.
	Rows         Rows
	RowsAffected int64 // an insert's
}
