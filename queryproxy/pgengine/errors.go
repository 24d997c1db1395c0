package pgengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

// classify wraps err, the error of a statement run under limited (the statement's time
// limit, derived from parent, the caller's context), with the engine sentinel that
// describes it, if one does, and replaces a server error by one that quotes no value
// (serverError). The context decides first: once it has ended, the driver's error (the
// server's "canceling statement due to user request", a closed connection) is a
// consequence of that.
func classify(parent, limited context.Context, err error) error {
	if err == nil {
		return nil
	}
	pgErr, isPG := errors.AsType[*pgconn.PgError](err)
	if isPG {
		err = redact(err, pgErr)
	}
	var kind error
	switch {
	case parent.Err() != nil:
		kind = engine.ErrCanceled
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			kind = engine.ErrTimeout
		}
	case limited.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		kind = engine.ErrTimeout
	case isPG:
		kind = sqlstateKind(pgErr.Code)
	case errors.Is(err, errClosed), errors.Is(err, puddle.ErrClosedPool), connectionLost(err):
		kind = engine.ErrUnavailable
	}
	if kind == nil {
		return err
	}
	return fmt.Errorf("%w: %w", kind, err)
}

// sqlstateKind is the sentinel of a SQLSTATE (https://www.postgresql.org/docs/current/
// errcodes-appendix.html), or nil.
func sqlstateKind(code string) error {
	switch {
	case strings.HasPrefix(code, "23"): // integrity constraint violation
		return engine.ErrConstraint
	case strings.HasPrefix(code, "22"): // data exception: a bound value the column's type refuses
		return engine.ErrInvalidValue
	case code == "42804", // datatype_mismatch: an order or pattern on a column of a type with no collation
		code == "42883", // undefined_function: an operator the column's type lacks (= on json)
		code == "428C9": // generated_always: a column the catalog did not show as generated
		return engine.ErrInvalidValue
	case code == "57014": // query_canceled, with no context ended: statement_timeout
		return engine.ErrTimeout
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "53"),    // insufficient resources: too many connections, disk full
		strings.HasPrefix(code, "57P"),   // admin or crash shutdown, cannot connect now, database dropped
		code == "55P03",                  // lock_not_available
		code == "40001", code == "40P01": // serialization failure, deadlock: another try may pass
		return engine.ErrUnavailable
	}
	return nil
}

// connectionLost reports whether err says that the server could not be reached or the
// connection broke.
func connectionLost(err error) bool {
	_, isConnErr := errors.AsType[*pgconn.ConnectError](err)
	_, isNetErr := errors.AsType[net.Error](err)
	return isConnErr || isNetErr ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err)
}

// serverError is a PostgreSQL error without its message and detail, which can quote a
// value of the statement (invalid input syntax for type bigint: "x"; Key (Code)=(x)
// already exists): the engine's errors reach the log, and values must not. It keeps the
// SQLSTATE, the severity and the names of the schema objects involved; for the classes
// whose messages name SQL, objects or the server's state but no value (messageKept), the
// message too. errors.As still finds the *pgconn.PgError.
type serverError struct {
	err   error // wraps pg
	pg    *pgconn.PgError
	where string // the context the error was wrapped in, up to pg
}

func redact(err error, pg *pgconn.PgError) error {
	if err == error(pg) {
		return &serverError{err: err, pg: pg}
	}
	// Keep the wrapping text before the server's error ("statement 2 of 3: ...").
	where, _, _ := strings.Cut(err.Error(), pg.Error())
	return &serverError{err: err, pg: pg, where: where}
}

func (e *serverError) Error() string {
	var b strings.Builder
	b.WriteString(e.where)
	b.WriteString("postgres ")
	b.WriteString(e.pg.Severity)
	b.WriteString(" SQLSTATE ")
	b.WriteString(e.pg.Code)
	if messageKept(e.pg.Code) {
		b.WriteString(": ")
		b.WriteString(e.pg.Message)
	}
	for _, f := range []struct{ name, val string }{
		{"table", e.pg.TableName}, {"column", e.pg.ColumnName}, {"constraint", e.pg.ConstraintName},
	} {
		if f.val != "" {
			fmt.Fprintf(&b, " (%s %q)", f.name, f.val)
		}
	}
	return b.String()
}

func (e *serverError) Unwrap() error { return e.err }

// messageKept reports whether the messages of a SQLSTATE's class never quote a value of
// the statement: 08 connection exception, 0A feature not supported, 42 syntax error or
// access rule violation, 53 insufficient resources, 57 operator intervention.
func messageKept(code string) bool {
	switch code[:min(2, len(code))] {
	case "08", "0A", "42", "53", "57":
		return true
	}
	return false
}
