package pgengine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// rows is the engine.Rows of a Query: the statement's result in the pipeline of a
// read (read.go), its values read raw and decoded per column into the values the result
// reports. Close (or the last Next) reads the rest of the pipeline and frees the
// connection; so does the statement time limit (expire) when the caller has stopped
// reading: it may be writing a row to a client that does not read, and must not hold a
// pool connection as long.
type rows struct {
	rd      *reading
	parent  context.Context // the caller's context
	limited context.Context // parent with the statement time limit
	cancel  context.CancelFunc
	stop    func() bool // stops expire
	cols    []sqlgen.Column
	dec     []decoder
	vals    []any

	mu     sync.Mutex // Next, Err, Close, and expire (on its own goroutine)
	err    error
	closed bool
}

func newRows(parent, limited context.Context, cancel context.CancelFunc, m *pgtype.Map, rd *reading) *rows {
	fds := rd.rr.FieldDescriptions()
	rs := &rows{rd: rd, parent: parent, limited: limited, cancel: cancel,
		cols: make([]sqlgen.Column, len(fds)), dec: make([]decoder, len(fds)), vals: make([]any, len(fds))}
	for i, fd := range fds {
		rs.cols[i] = sqlgen.Column{Name: fd.Name, Type: columnType(fd.DataTypeOID)}
		rs.dec[i] = newDecoder(m, fd)
	}
	rs.stop = contain.ContextAfterFunc(limited, nil, "query.postgres", rs.expire)
	return rs
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
	if rs.err != nil || rs.closed {
		return false
	}
	// pgconn notices the end of the context only when it reads from the connection, not
	// between rows it has already received; checking here stops at once. (The cancel
	// request went to the server when the context ended.)
	if err := rs.limited.Err(); err != nil {
		rs.fail(err)
		return false
	}
	if !rs.rd.rr.NextRow() {
		// The rows are read to the end: the rest of the pipeline (the command tag, which
		// must be a SELECT's, the ROLLBACK, the Sync) says whether all went well.
		if err := rs.rd.finish(rs.parent); err != nil {
			rs.fail(err)
		}
		return false
	}
	raw := rs.rd.rr.Values()
	for i, d := range rs.dec {
		if raw[i] == nil {
			rs.vals[i] = nil
			continue
		}
		v, err := d(raw[i])
		if err != nil {
			rs.fail(fmt.Errorf("column %q: %w", rs.cols[i].Name, err))
			return false
		}
		rs.vals[i] = v
	}
	return true
}

// fail ends the rows with err and frees the connection (the caller may
// write to a slow client before it closes the rows). rs.mu held.
func (rs *rows) fail(err error) {
	rs.err = fmt.Errorf("reading rows: %w", classify(rs.parent, rs.limited, err))
	_ = rs.rd.finish(rs.parent)
}

// expire ends the rows at the statement time limit (or the caller's end) if the caller is
// not reading them, and frees the connection: the statement was canceled on the server
// when the context ended, and what is left of the pipeline is dropped.
func (rs *rows) expire() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.err == nil && !rs.closed && !rs.rd.done { // not read to the end
		rs.fail(rs.limited.Err())
	}
}

// Close ends the query and its read-only transaction (rolled back: it wrote nothing, and
// a setting a statement may have changed is undone), and frees the connection. Rows not
// read are dropped; when the context has ended, the statement was canceled on the server.
func (rs *rows) Close() error {
	rs.stop()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return nil
	}
	rs.closed = true
	err := rs.rd.finish(rs.parent)
	rs.cancel()
	if err != nil && rs.err == nil {
		return fmt.Errorf("closing rows: %w", err)
	}
	return nil
}

// decoder decodes one value of a column, never NULL, from the form the server sent.
type decoder func(src []byte) (any, error)

// newDecoder returns the decoder of a result column: by its type and the format it comes
// in (binary for the types of resultFormats, text for the others; text for all when the
// connection's exec mode does not describe the statement first), to nil, int64, float64,
// string, bool, time.Time (in UTC), []byte or engine.Decimal.
func newDecoder(m *pgtype.Map, fd pgconn.FieldDescription) decoder {
	oid, format := fd.DataTypeOID, fd.Format
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		return scanAs(m, oid, format, func(v int64) any { return v })
	case pgtype.Float8OID:
		return scanAs(m, oid, format, func(v float64) any { return v })
	case pgtype.BoolOID:
		return scanAs(m, oid, format, func(v bool) any { return v })
	case pgtype.ByteaOID:
		return scanAs(m, oid, format, func(v []byte) any { return v })
	case pgtype.TimestamptzOID:
		return scanAs(m, oid, format, func(v pgtype.Timestamptz) any { return timeValue(v.Time, v.InfinityModifier) })
	case pgtype.TimestampOID:
		return scanAs(m, oid, format, func(v pgtype.Timestamp) any { return timeValue(v.Time, v.InfinityModifier) })
	case pgtype.DateOID:
		return scanAs(m, oid, format, func(v pgtype.Date) any { return timeValue(v.Time, v.InfinityModifier) })
	}
	if format != pgx.TextFormatCode {
		return func([]byte) (any, error) {
			return nil, fmt.Errorf("type %d came in binary format, which the engine does not decode", oid)
		}
	}
	switch oid {
	case pgtype.NumericOID:
		// PostgreSQL's own text of the number: every digit it has, never a float.
		return func(src []byte) (any, error) { return engine.Decimal(src), nil }
	case pgtype.Float4OID:
		// The shortest decimal that reads back as the float4, read as a float64: 37.48,
		// not the float4's exact 37.479999542236328125.
		return func(src []byte) (any, error) { return strconv.ParseFloat(string(src), 64) }
	}
	return func(src []byte) (any, error) { return string(src), nil }
}

// scanAs is a decoder that scans with pgx's plan for (oid, format) into a T, and converts
// it with conv.
func scanAs[T any](m *pgtype.Map, oid uint32, format int16, conv func(T) any) decoder {
	var dst T
	plan := m.PlanScan(oid, format, &dst)
	return func(src []byte) (any, error) {
		if err := plan.Scan(src, &dst); err != nil {
			return nil, err
		}
		return conv(dst), nil
	}
}

// timeValue is a time in UTC, or the text "infinity" or "-infinity".
func timeValue(t time.Time, inf pgtype.InfinityModifier) any {
	switch inf {
	case pgtype.Infinity:
		return "infinity"
	case pgtype.NegativeInfinity:
		return "-infinity"
	}
	return t.UTC()
}
