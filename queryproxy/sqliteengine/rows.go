package sqliteengine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// rows is the queryproxy.Rows of a Query: database/sql's rows, with the columns typed by
// their declared types and the values normalized to them.
type rows struct {
	r       *sql.Rows
	parent  context.Context // the caller's context
	limited context.Context // parent with the statement time limit
	cancel  context.CancelFunc
	cols    []sqlgen.Column
	vals    []any
	ptrs    []any // &vals[i], for Scan
	err     error
	closed  bool
}

func newRows(parent, limited context.Context, cancel context.CancelFunc, r *sql.Rows, cols []sqlgen.Column) (*rows, error) {
	if len(cols) > 0 {
		// The statement's columns as sqlgen resolved them from this engine's
		// catalog, which took their types from the same declared types:
		// no need to ask the driver again for each query.
		rs := &rows{r: r, parent: parent, limited: limited, cancel: cancel,
			cols: cols, vals: make([]any, len(cols)), ptrs: make([]any, len(cols))}
		for i := range rs.ptrs {
			rs.ptrs[i] = &rs.vals[i]
		}
		return rs, nil
	}
	cts, err := r.ColumnTypes()
	if err != nil {
		err = classify(parent, limited, err)
		r.Close()
		cancel()
		return nil, err
	}
	rs := &rows{r: r, parent: parent, limited: limited, cancel: cancel,
		cols: make([]sqlgen.Column, len(cts)), vals: make([]any, len(cts)), ptrs: make([]any, len(cts))}
	for i, ct := range cts {
		// The declared type of the column the result column is (empty for an
		// expression), which is what the catalog reports for it.
		rs.cols[i] = sqlgen.Column{Name: ct.Name(), Type: columnType(ct.DatabaseTypeName())}
		rs.ptrs[i] = &rs.vals[i]
	}
	return rs, nil
}

func (rs *rows) Columns() []sqlgen.Column { return rs.cols }
func (rs *rows) Values() []any            { return rs.vals }
func (rs *rows) Err() error               { return rs.err }

func (rs *rows) Next() bool {
	if rs.err != nil || rs.closed {
		return false
	}
	// database/sql notices the end of the context only between rows; checking here
	// stops at once.
	if err := rs.limited.Err(); err != nil {
		rs.fail(err)
		return false
	}
	if !rs.r.Next() {
		if err := rs.r.Err(); err != nil {
			rs.fail(err)
		}
		return false
	}
	if err := rs.r.Scan(rs.ptrs...); err != nil {
		rs.fail(err)
		return false
	}
	for i, c := range rs.cols {
		rs.vals[i] = normalize(c.Type, rs.vals[i])
	}
	return true
}

func (rs *rows) fail(err error) {
	rs.err = fmt.Errorf("reading rows: %w", classify(rs.parent, rs.limited, err))
}

func (rs *rows) Close() error {
	if rs.closed {
		return nil
	}
	rs.closed = true
	err := rs.r.Close()
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
// queryproxy.Decimal as its text (a column of NUMERIC or REAL affinity converts it), a
// bool as 1 or 0. Other values are bound as they are. The caller's slice is not changed.
func bindArgs(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		var b any
		switch x := a.(type) {
		case time.Time:
			b = x.UTC().Format(time.RFC3339Nano)
		case queryproxy.Decimal:
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
