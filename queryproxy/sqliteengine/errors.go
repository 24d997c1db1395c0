package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

// Primary result codes that classify errors (the low byte of an extended code).
const (
	sqliteBusy       = sqlite3.SQLITE_BUSY
	sqliteLocked     = sqlite3.SQLITE_LOCKED
	sqliteCantOpen   = sqlite3.SQLITE_CANTOPEN
	sqliteConstraint = sqlite3.SQLITE_CONSTRAINT
	sqliteMismatch   = sqlite3.SQLITE_MISMATCH
)

// classify wraps err, the error of a statement run under limited (the statement's time
// limit, derived from parent, the caller's context), with the engine sentinel that
// describes it, if one does. The context decides first: once it has ended, the driver's
// error (an interrupted statement, a closed Rows) is a consequence of that.
func classify(parent, limited context.Context, err error) error {
	if err == nil {
		return nil
	}
	var kind error
	switch {
	case parent.Err() != nil:
		kind = engine.ErrCanceled
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			kind = engine.ErrTimeout
		}
	case limited.Err() != nil, pastLimit(err):
		kind = engine.ErrTimeout
	case errors.Is(err, sql.ErrConnDone), errors.Is(err, errClosed):
		kind = engine.ErrUnavailable
	default:
		switch sqliteCode(err) & 0xff {
		case sqliteConstraint:
			kind = engine.ErrConstraint
		case sqliteMismatch: // a value an INTEGER PRIMARY KEY refuses
			kind = engine.ErrInvalidValue
		case sqliteBusy, sqliteLocked, sqliteCantOpen:
			kind = engine.ErrUnavailable
		}
	}
	if kind == nil {
		return err
	}
	return fmt.Errorf("%w: %w", kind, err)
}

// sqliteCode is the (extended) SQLite result code of err, or 0 if err is not SQLite's.
func sqliteCode(err error) int {
	if e, ok := errors.AsType[*sqlite.Error](err); ok {
		return e.Code()
	}
	return 0
}
