package queryproxy

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// The codes of the query service's errors, in the body
// {"Error": {"Code", "Message", "RequestId"}} and, for a failure after a
// result started, in the ErrorTrailer (CodeResultTooLarge and the
// engine's codes are in result.go).
const (
	CodeSyntax              = "syntax_error"           // 400: IQL that does not parse
	CodeInvalidStatement    = "invalid_statement"      // 400: parses, but cannot run (LIKE on a number, a column twice)
	CodeInvalidRequest      = "invalid_request"        // 400: a malformed body, route or parameter
	CodeUnauthorized        = "unauthorized"           // 401: no or bad access token (RFC 6750 challenge)
	CodeForbidden           = "forbidden"              // 403: a scope is missing, or a write is refused
	CodeUnknownTable        = "unknown_table"          // 404
	CodeUnknownColumn       = "unknown_column"         // 404
	CodeNotFound            = "not_found"              // 404: no such endpoint
	CodeMethodNotAllowed    = "method_not_allowed"     // 405
	CodeConflict            = "constraint_violation"   // 409
	CodeTooLarge            = "too_large"              // 413: a body or statement over a limit
	CodeUnsupportedMedia    = "unsupported_media_type" // 415
	CodeTooManyRequests     = "too_many_requests"      // 429: over the per-user concurrency bound
	CodeBadGateway          = "bad_gateway"            // 502: the upstream query service failed (iq engine)
	CodeOutcomeUnknown      = "outcome_unknown"        // 502: a write was sent and not answered (iq engine): it may have been applied
	CodeServiceUnavailable  = CodeUnavailable          // 503
	CodeGatewayTimeout      = CodeTimeout              // 504: the statement time limit
	CodeClientClosedRequest = CodeCanceled             // the client went away (logged; nobody reads it)
)

// Error is a query error as the client reads it, plus its cause for the
// log. Message never carries internal detail (no SQL, no driver text).
type Error struct {
	Status  int
	Code    string
	Message string
	cause   error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s (%d): %s: %v", e.Code, e.Status, e.Message, e.cause)
	}
	return fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.cause }

func errUnknownTable(name string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeUnknownTable, Message: fmt.Sprintf("unknown table %q", truncate(name, 128))}
}

func errForbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: msg}
}

func errInvalid(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: msg}
}

// parseError maps an iql error: a syntax error with its position (400), a
// bound (413), a bad structured request (400).
func parseError(err error) *Error {
	status := http.StatusBadRequest
	code := CodeInvalidRequest
	if errors.Is(err, iql.ErrTooLarge) {
		status, code = http.StatusRequestEntityTooLarge, CodeTooLarge
	} else if _, ok := errors.AsType[*iql.SyntaxError](err); ok {
		code = CodeSyntax
	}
	return &Error{Status: status, Code: code, Message: err.Error()}
}

// engineError maps an engine's error (before any byte of a result was
// sent) to what the client reads.
func engineError(err error) *Error {
	switch {
	case errors.Is(err, ErrTooManyRows):
		return &Error{Status: http.StatusUnprocessableEntity, Code: CodeResultTooLarge,
			Message: "the result has more rows than allowed: narrow the WHERE clause or add a LIMIT", cause: err}
	case errors.Is(err, engine.ErrInvalidValue):
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidStatement, Message: "a value does not fit its column's type", cause: err}
	case errors.Is(err, engine.ErrConstraint):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "the write conflicts with the data (a key, not-null or check constraint)", cause: err}
	case errors.Is(err, engine.ErrTimeout):
		return &Error{Status: http.StatusGatewayTimeout, Code: CodeGatewayTimeout, Message: "the statement ran past its time limit", cause: err}
	case errors.Is(err, engine.ErrCanceled):
		return &Error{Status: 499, Code: CodeClientClosedRequest, Message: "the request was canceled", cause: err}
	case errors.Is(err, engine.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable, Message: "the database is unavailable; try again later", cause: err}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", cause: err}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// generateError maps a generation error to its status: 404 unknown names,
// 400 a statement the client cannot have (413 too large, 403 an owner the
// caller cannot be), else 500.
func generateError(err error) *Error {
	if u, ok := errors.AsType[*sqlgen.UnknownError](err); ok {
		if u.Kind == "column" {
			return &Error{Status: http.StatusNotFound, Code: CodeUnknownColumn, Message: u.Error()}
		}
		return errUnknownTable(u.Name)
	}
	if s, ok := errors.AsType[*sqlgen.StatementError](err); ok {
		if errors.Is(s, iql.ErrTooLarge) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: s.Msg}
		}
		if errors.Is(s, sqlgen.ErrOwnerUnusable) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: s.Msg}
		}
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalidStatement, Message: s.Msg}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", cause: err}
}
