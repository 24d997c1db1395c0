package sqliteengine

import (
	"database/sql/driver"
	"errors"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// The statement time limit on a running SELECT. The driver interrupts a statement whose
// context ends only while it computes its first row; Rows.Next checks the limit between
// rows; but one step can read a whole table, for the one row a WHERE matches at its end,
// holding a read connection as long. So sqlgen has every SELECT's WHERE call rowCheckFunc
// first, on every row the statement reads (sqlgen.Options.RowCheck), with the statement's
// deadline for its argument, in nanoseconds of the process's monotonic clock (mono): past
// it, the call fails the statement. (The wall clock may step.)
const rowCheckFunc = "gatehouseWithin"

// errPastLimit is rowCheckFunc's error: the statement time limit has passed. SQLite passes
// on its text, which classify recognizes.
var errPastLimit = errors.New("gatehouse: past the statement time limit")

func init() {
	sqlite.MustRegisterFunction(rowCheckFunc, &sqlite.FunctionImpl{NArgs: 1, Scalar: within})
}

// within is rowCheckFunc: 1 while the deadline args[0] (mono) is ahead.
func within(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	if d, ok := args[0].(int64); !ok || mono() >= d {
		return nil, errPastLimit
	}
	return int64(1), nil
}

// started is when the process started, as far as mono counts.
var started = time.Now()

// mono is the process's monotonic clock, in nanoseconds since started.
func mono() int64 { return int64(time.Since(started)) }

// pastLimit reports whether err is a statement failed by rowCheckFunc.
func pastLimit(err error) bool {
	return err != nil && strings.Contains(err.Error(), errPastLimit.Error())
}

// RowCheck is the function the SELECTs this engine runs must call on every row they read
// (sqlgen.Options.RowCheck): it holds the statement time limit.
func (e *Engine) RowCheck() string { return rowCheckFunc }

// withDeadline gives args with each sqlgen.RowCheckArg replaced by deadline, in mono's
// nanoseconds. The caller's slice is not changed.
func withDeadline(args []any, deadline time.Time) []any {
	out := args
	for i, a := range args {
		if _, ok := a.(sqlgen.RowCheckArg); ok {
			if &out[0] == &args[0] {
				out = append([]any(nil), args...)
			}
			out[i] = int64(deadline.Sub(started))
		}
	}
	return out
}
