package sqlgen

import (
	"fmt"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// Resolve returns a copy of stmt, a statement on table t, with the table and every column
// in the catalog's spelling, "*" expanded to t's columns, and a select's result columns
// (nil for other statements). It is name resolution alone, by the rule Generate follows
// (Table.Column: ASCII case-insensitively, a name the catalog lacks an *UnknownError), for
// a target that prints IQL rather than SQL (a Forwarder's upstream, the catalogue served
// in memory); it checks nothing else of the statement. stmt is not changed; the copy
// shares its values (literals, an insert's rows, the limit).
func Resolve(t Table, stmt iql.Statement) (iql.Statement, []Column, error) {
	col := func(name string) (string, error) {
		c, ok := t.Column(name)
		if !ok {
			return "", &UnknownError{Kind: "column", Name: name, Table: t.Name}
		}
		return c.Name, nil
	}
	var fail error
	where := func(e iql.Expr) iql.Expr {
		return mapExpr(e, func(c *iql.Compare) *iql.Compare {
			name, err := col(c.Column)
			if err != nil && fail == nil {
				fail = err
			}
			return &iql.Compare{Column: name, Op: c.Op, Values: c.Values}
		})
	}
	switch s := stmt.(type) {
	case *iql.Select:
		out := &iql.Select{Table: t.Name, Limit: s.Limit}
		cols := t.Columns
		if len(s.Columns) > 0 {
			cols = nil
			for _, n := range s.Columns {
				c, ok := t.Column(n)
				if !ok {
					return nil, nil, &UnknownError{Kind: "column", Name: n, Table: t.Name}
				}
				cols = append(cols, c)
			}
		}
		for _, c := range cols {
			out.Columns = append(out.Columns, c.Name)
		}
		out.Where = where(s.Where)
		for _, o := range s.OrderBy {
			name, err := col(o.Column)
			if err != nil && fail == nil {
				fail = err
			}
			out.OrderBy = append(out.OrderBy, iql.OrderTerm{Column: name, Desc: o.Desc})
		}
		if fail != nil {
			return nil, nil, fail
		}
		return out, cols, nil
	case *iql.Insert:
		out := &iql.Insert{Table: t.Name, Rows: s.Rows}
		for _, n := range s.Columns {
			name, err := col(n)
			if err != nil {
				return nil, nil, err
			}
			out.Columns = append(out.Columns, name)
		}
		return out, nil, nil
	case *iql.Update:
		out := &iql.Update{Table: t.Name}
		for _, a := range s.Set {
			name, err := col(a.Column)
			if err != nil {
				return nil, nil, err
			}
			out.Set = append(out.Set, iql.Assignment{Column: name, Value: a.Value})
		}
		out.Where = where(s.Where)
		if fail != nil {
			return nil, nil, fail
		}
		return out, nil, nil
	case *iql.Delete:
		out := &iql.Delete{Table: t.Name, Where: where(s.Where)}
		if fail != nil {
			return nil, nil, fail
		}
		return out, nil, nil
	}
	return nil, nil, fmt.Errorf("sqlgen: cannot resolve a %T", stmt)
}

// mapExpr copies e with each comparison replaced by f's.
func mapExpr(e iql.Expr, f func(*iql.Compare) *iql.Compare) iql.Expr {
	switch x := e.(type) {
	case *iql.Compare:
		return f(x)
	case *iql.And:
		out := &iql.And{}
		for _, t := range x.Terms {
			out.Terms = append(out.Terms, mapExpr(t, f))
		}
		return out
	case *iql.Or:
		out := &iql.Or{}
		for _, t := range x.Terms {
			out.Terms = append(out.Terms, mapExpr(t, f))
		}
		return out
	case *iql.Not:
		return &iql.Not{X: mapExpr(x.X, f)}
	}
	return e
}
