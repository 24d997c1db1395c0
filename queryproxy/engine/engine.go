package engine

import (
	"context"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Engine runs the statements of the query service against one database.
//
// The handler asks Catalog for the tables and columns a statement may name, has sqlgen
// build the statement in the engine's Dialect, and runs it with Query (a select) or Exec
// (inserts). An Engine is safe for concurrent use. Its errors wrap one of ErrConstraint,
// ErrTimeout, ErrCanceled, ErrInvalidValue or ErrUnavailable when they are one of those
// (compare with errors.Is); any other error is the engine's own fault or the statement's,
// and its text (which may quote the database's message) is for the log, never for the
// client.
type Engine interface {
	// Dialect is the SQL dialect the engine's statements are written in.
	Dialect() sqlgen.Dialect

	// Catalog reports the tables and their columns, with each column's result Type, as
	// the engine sees them. It is cached: the engine notices a change of schema without
	// reading the whole catalog on every call. The Catalog returned is shared; callers
	// must not modify it.
	Catalog(ctx context.Context) (sqlgen.Catalog, error)

	// Query runs one read statement on a read-only connection, under the engine's
	// statement time limit, which covers reading the rows too. The caller must Close the
	// Rows. A statement that tries to write fails.
	Query(ctx context.Context, st sqlgen.Statement) (Rows, error)

	// Exec runs write statements in one transaction and returns the total number of rows
	// they affected. If any statement fails, none of them has any effect.
	Exec(ctx context.Context, sts []sqlgen.Statement) (int64, error)

	// Close releases the engine's connections. Statements running at the time may fail.
	Close() error
}

// RowChecker is an Engine whose SELECTs must call a function of its own on every row they
// read (sqlgen.Options.RowCheck), to hold a limit while a statement runs: the SQLite
// engine's statement time limit.
type RowChecker interface {
	RowCheck() string
}

// Rows is the result of Query, read one row at a time:
//
//	defer rows.Close()
//	for rows.Next() {
//		vals := rows.Values()
//		...
//	}
//	if err := rows.Err(); err != nil { ... }
type Rows interface {
	// Columns are the result's columns in select-list order. A column's Type is the type
	// the catalog reports for the column (its declared type), not the type of the values
	// that happen to come back.
	Columns() []sqlgen.Column

	// Next advances to the next row. It returns false at the end of the rows or on an
	// error; Err tells which.
	Next() bool

	// Values are the current row's values, one per column, each normalized to one of:
	// nil, int64, float64, string, bool, time.Time, []byte or Decimal. The slice (and a
	// []byte in it) is valid only until the next call of Next.
	Values() []any

	// Err is the error that ended Next early, or nil at the normal end of the rows.
	Err() error

	// Close ends the query and frees its connection. It is safe to call more than once.
	Close() error
}

// Decimal is an exact decimal number as text, e.g. "37.4800": an optional minus sign,
// digits, an optional fraction. Engines whose database has an exact decimal type return
// its values as Decimal, so that no digit is lost or gained on the way to JSON; the result
// writer prints it as a JSON number (quoted, if it is not one, such as "NaN").
type Decimal string

// Pooled is an Engine or a Forwarder that runs at most MaxConns statements at once
// (its connection pool): the handler keeps any one user to a share of it.
type Pooled interface {
	MaxConns() int
}

// Pinger is an Engine or a Forwarder that can tell whether its database or upstream
// answers, for a readiness probe. Ping returns nil when it does, within ctx.
type Pinger interface {
	Ping(ctx context.Context) error
}
