package sqliteengine

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// rows is the engine.Rows of a Query: the driver's rows, with the columns typed by
// their declared types and the values normalized to them. The connection goes back to the
// pool as soon as the rows end (their last row read, an error, or Close), and at the
// statement time limit even if the caller stops reading (it may be writing to a slow
// client): a few slow readers cannot hold every connection, nor a read snapshot that keeps
// the WAL from being checkpointed.
type rows struct {
	parent  context.Context // the caller's context
	limited context.Context // parent with the statement time limit
	cancel  context.CancelFunc
	stop    func() bool // stops expire
	cols    []sqlgen.Column
	dest    []driver.Value // the driver's values of the current row
	vals    []any          // dest normalized

	mu       sync.Mutex // Next, Err, Close, and expire (the time limit's, on its own goroutine)
	r        driver.Rows
	release  func(broken bool) // gives the connection back
	released bool              // r is closed and the connection given back
	closeErr error             // r.Close's
	err      error
	broken   bool // the connection failed: it is closed, not given back
	closed   bool
}

func newRows(parent, limited context.Context, cancel context.CancelFunc, r driver.Rows, cols []sqlgen.Column, release func(bool)) (*rows, error) {
	rs := &rows{r: r, release: release, parent: parent, limited: limited, cancel: cancel}
	if len(cols) == 0 {
		// A statement sqlgen did not resolve the columns of (tests): the driver's
		// names, typed by the declared type of the column each one is (empty for
		// an expression), which is what the catalog reports for it.
		names := r.Columns()
		typer, _ := r.(driver.RowsColumnTypeDatabaseTypeName)
		cols = make([]sqlgen.Column, len(names))
		for i, n := range names {
			cols[i].Name = n
			if typer != nil {
				cols[i].Type = columnType(typer.ColumnTypeDatabaseTypeName(i))
			}
		}
	}
	// Otherwise the statement's columns as sqlgen resolved them from this engine's
	// catalog, which took their types from the same declared types.
	if n := len(r.Columns()); n != len(cols) {
		err := fmt.Errorf("the statement has %d columns, the result %d", len(cols), n)
		rs.closed = true
		r.Close()
		release(false)
		cancel()
		return nil, err
	}
	rs.cols, rs.dest, rs.vals = cols, make([]driver.Value, len(cols)), make([]any, len(cols))
	rs.stop = contain.ContextAfterFunc(limited, nil, "query.sqlite", rs.expire)
	return rs, nil
}

func (rs *rows) Columns() []sqlgen.Column { return rs.cols }
func (rs *rows) Values() []any            { return rs.vals }

func (rs *rows) Err() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.err
}

func (rs *rows) Next() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.err != nil || rs.closed || rs.released {
		return false
	}
	// The driver interrupts a statement whose context ends only while it starts, or
	// waits for a lock; checking here stops a long result at once.
	if err := rs.limited.Err(); err != nil {
		rs.fail(err)
		return false
	}
	if err := rs.r.Next(rs.dest); err != nil {
		if err != io.EOF {
			rs.fail(err)
		} else {
			rs.free()
		}
		return false
	}
	for i, c := range rs.cols {
		rs.vals[i] = normalize(c.Type, rs.dest[i])
	}
	return true
}

// fail ends the rows with err. rs.mu held.
func (rs *rows) fail(err error) {
	rs.broken = rs.broken || isBroken(err)
	rs.err = fmt.Errorf("reading rows: %w", classify(rs.parent, rs.limited, err))
	rs.free()
}

// free closes the driver's rows and gives the connection back, once. The driver's Close
// resets the statement, which repeats the error of a failed step: the connection is no
// worse for it, and goes back unless it is broken. rs.mu held.
func (rs *rows) free() {
	if rs.released {
		return
	}
	rs.released = true
	rs.closeErr = rs.r.Close()
	rs.release(rs.broken || isBroken(rs.closeErr))
}

// expire ends the rows at the statement time limit (or the caller's end), if the caller
// is not reading them: it may be writing the current row to a slow client.
func (rs *rows) expire() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.released && rs.err == nil {
		rs.fail(rs.limited.Err())
	}
}

func (rs *rows) Close() error {
	rs.stop()
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return nil
	}
	rs.closed = true
	rs.free()
	err := rs.closeErr
	if rs.err != nil {
		err = nil // reported by Err; the reset repeats it
	}
	rs.mu.Unlock()
	rs.cancel()
	if err != nil {
		return fmt.Errorf("closing rows: %w", err)
	}
	return nil
}

// normalize converts v, a value of a column of type t as the driver returns it (nil,
// int64, float64, string, []byte or time.Time), to the value the result reports.
func normalize(t sqlgen.Type, v any) any {
	switch t {
	case sqlgen.Boolean:
		switch x := v.(type) {
		case int64:
			return x != 0
		case float64:
			return x != 0
		case string:
			switch {
			case strings.EqualFold(x, "true"):
				return true
			case strings.EqualFold(x, "false"):
				return false
			}
		}
	case sqlgen.DateTime:
		if x, ok := v.(time.Time); ok {
			return x.UTC()
		}
	}
	return v
}

// bindArgs converts the arguments of a statement to what the driver binds: a time.Time
// as RFC 3339 UTC text (how DateTime values are stored, so they compare as text), a
// engine.Decimal as its text (a column of NUMERIC or REAL affinity converts it), a
// bool as 1 or 0. Other values are bound as they are. The caller's slice is not changed.
func bindArgs(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		var b any
		switch x := a.(type) {
		case time.Time:
			b = x.UTC().Format(time.RFC3339Nano)
		case engine.Decimal:
			b = string(x)
		case bool:
			b = int64(0)
			if x {
				b = int64(1)
			}
		default:
			continue
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = b
	}
	return out
}
