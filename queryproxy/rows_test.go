package queryproxy

import "github.com/gatehouse/gatehouse/queryproxy/sqlgen"

// sliceRows is a Rows over rows held in memory, ending with err (if any) after them.
type sliceRows struct {
	cols []sqlgen.Column
	rows [][]any
	err  error
	i    int
}

func (r *sliceRows) Columns() []sqlgen.Column { return r.cols }
func (r *sliceRows) Values() []any            { return r.rows[r.i-1] }
func (r *sliceRows) Close() error             { return nil }

func (r *sliceRows) Next() bool {
	if r.i >= len(r.rows) {
		return false
	}
	r.i++
	return true
}

func (r *sliceRows) Err() error {
	if r.i >= len(r.rows) {
		return r.err
	}
	return nil
}

// genRows is a Rows of n rows that all hold the same values, without allocating.
type genRows struct {
	cols []sqlgen.Column
	vals []any
	n, i int
}

func (r *genRows) Columns() []sqlgen.Column { return r.cols }
func (r *genRows) Values() []any            { return r.vals }
func (r *genRows) Err() error               { return nil }
func (r *genRows) Close() error             { return nil }

func (r *genRows) Next() bool {
	if r.i >= r.n {
		return false
	}
	r.i++
	return true
}

// securityColumns and securityRow are a typical row of market data.
var securityColumns = []sqlgen.Column{
	{Name: "Code", Type: sqlgen.String},
	{Name: "Exchange", Type: sqlgen.String},
	{Name: "Name", Type: sqlgen.String},
	{Name: "LastPrice", Type: sqlgen.Decimal},
	{Name: "Currency", Type: sqlgen.String},
	{Name: "Volume", Type: sqlgen.Integer},
	{Name: "Updated", Type: sqlgen.DateTime},
}

func securityRow() []any {
	return []any{"BHP", "ASX", "BHP Group Limited", 37.48, "AUD", int64(12345678), "2026-11-21T10:30:00Z"}
}
