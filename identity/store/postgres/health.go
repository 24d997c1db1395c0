package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/identity/store"
)

// An unreachable database is told apart from every other failure, so that
// the endpoints answer 503 temporarily_unavailable rather than 500, and
// the outages this process saw are recorded (store.Outages), so that a
// refresh whose answer an outage swallowed can be sent again afterwards.

// unreachable reports whether err says that the database could not be
// reached or went away: a failed connection attempt, a connection that
// broke or was closed under a statement, or the server refusing work
// because it is shutting down or starting (SQLSTATE class 08, 57P01 to
// 57P03). A statement cancelled by its caller's context is not an outage.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return strings.HasPrefix(pgErr.Code, "08") ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, pgconn.ErrConnClosed)
}

// answered reports whether err (nil included) came back from the server,
// which was therefore reachable: success, no rows, or an error the server
// reported that is not one of shutting down.
func answered(err error) bool {
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		return true
	}
	_, isPg := errors.AsType[*pgconn.PgError](err)
	return isPg && !unreachable(err)
}

// unavailableError is an error of an unreachable database: it matches
// store.ErrUnavailable and wraps the driver's error.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return "database unavailable: " + e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// maxOutages bounds the ended outages health remembers.
const maxOutages = 64

// span is an outage: from the first failure to the first success after it.
type span struct{ from, to time.Time }

// health follows whether the database is reachable from this process, from
// the outcome of every statement and of the listener's connection, and
// remembers the recent outages. It is safe for concurrent use; a
// statement that succeeds while the database is up costs one atomic load.
type health struct {
	down  atomic.Bool
	now   func() time.Time
	log   *zap.Logger
	mu    sync.Mutex
	since time.Time // the first failure of the outage under way, when down
	past  []span    // ended outages, oldest first, at most maxOutages
}

func newHealth(log *zap.Logger, now func() time.Time) *health {
	return &health{now: now, log: log}
}

// check notes what err says of the database and returns it, as an error
// matching store.ErrUnavailable when the database was unreachable.
func (h *health) check(err error) error {
	switch {
	case answered(err):
		if h.down.Load() {
			h.up()
		}
	case unreachable(err):
		h.fail(err)
		return &unavailableError{err}
	}
	return err
}

// fail notes a failure to reach the database.
func (h *health) fail(err error) {
	if h.down.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down.Load() {
		return
	}
	h.since = h.now()
	h.down.Store(true)
	h.log.Warn("postgres store unreachable: requests that need it fail until it is back", zap.Error(err))
}

// up notes that the database answered.
func (h *health) up() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down.Load() {
		return
	}
	s := span{from: h.since, to: h.now()}
	if len(h.past) == maxOutages {
		h.past = append(h.past[:0], h.past[1:]...)
	}
	h.past = append(h.past, s)
	h.down.Store(false)
	h.log.Info("postgres store reachable again", zap.Duration("outage", s.to.Sub(s.from)))
}

// Unavailable returns how much of the time from from to to the database
// was unreachable from this process (store.Outages): the overlap of that
// interval with the recorded outages and the one under way.
func (h *health) Unavailable(from, to time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var total time.Duration
	overlap := func(s span) {
		a, b := s.from, s.to
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			total += b.Sub(a)
		}
	}
	for _, s := range h.past {
		overlap(s)
	}
	if h.down.Load() {
		overlap(span{from: h.since, to: h.now()})
	}
	return total
}
