package engine

import (
	"errors"
	"fmt"
)

// The errors of an engine. An engine wraps its driver's error with the sentinel that
// classifies it (fmt.Errorf("...: %w: %w", ErrTimeout, err)), so errors.Is finds both.
// The handler maps them to statuses; their text is for the log.
var (
	// ErrConstraint: a write violated a constraint of the database (unique or primary key,
	// not null, check, foreign key). The client's request conflicts with the data: 409.
	ErrConstraint = errors.New("constraint violated")

	// ErrTimeout: the statement ran into the engine's statement time limit, or into the
	// deadline of the caller's context.
	ErrTimeout = errors.New("statement time limit exceeded")

	// ErrCanceled: the caller's context was canceled (the client went away) before the
	// statement finished.
	ErrCanceled = errors.New("statement canceled")

	// ErrInvalidValue: a value of the statement does not fit its column's
	// type (a word compared to a number column, an impossible date) and the
	// database refused it. The client's statement is at fault: 400.
	ErrInvalidValue = errors.New("a value does not fit its column's type")

	// ErrUnavailable: the engine cannot run the statement now: the database cannot be
	// reached or opened, it stayed locked longer than the engine waits, or the engine is
	// closed. Trying again later may succeed.
	ErrUnavailable = errors.New("query engine unavailable")
)

// The errors of a Forwarder, next to the engine ones (ErrTimeout for the
// upstream's time limit, ErrUnavailable when it cannot be reached or says
// so).
var (
	// ErrBadGateway: the upstream answered something the service cannot
	// pass on (a failure of its own, or an answer of the wrong shape).
	ErrBadGateway = errors.New("the upstream query service failed")
	// ErrUpstreamRefused: the upstream refused the request (a 4xx);
	// UpstreamError says which.
	ErrUpstreamRefused = errors.New("the upstream query service refused the request")
	// ErrFateUnknown: a write was sent but its answer never came (the time
	// limit, a connection lost): the upstream may have applied it.
	ErrFateUnknown = errors.New("the upstream may have applied the write")
)

// UpstreamError is a refusal of the upstream: its status, and its error
// code when its body had one.
type UpstreamError struct {
	Status int
	Code   string
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream answered %d %s", e.Status, e.Code)
}

func (e *UpstreamError) Unwrap() error { return ErrUpstreamRefused }
