package sqlgen

import (
	"errors"
	"fmt"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// Venue confines a statement to the rows of the venues a caller holds, on a market-data
// table whose rows each name their venue. See "Venue" in the package documentation.
type Venue struct {
	// Column is the venue column's name, resolved against the table like any column. A
	// table without it, or whose column is not a String of a text type (or one read as
	// its text, TextCast), is a configuration error (a plain error).
	Column string
	// Held are the venues whose rows the statement sees, each a bind argument, compared
	// as "=" compares: exactly, byte-wise and case-sensitively ("asx" and "ASX " are not
	// "ASX"). None: no row, but for those whose venue is NULL when Null is set.
	Held []string
	// Null lets the statement see the rows whose venue is NULL too. The policy sets it
	// for a caller who holds every venue of the table's feed.
	Null bool
}

// ErrNoVenue is returned by FilterVenue when the filter sees no row at all (no venue held,
// NULL not visible), which IQL cannot write as a condition: the statement's answer is
// empty (a select) or touches nothing (an update or delete).
var ErrNoVenue = errors.New("sqlgen: the caller holds no venue of the table")

// venueColumn resolves v's column in t, refusing a column the filter cannot compare
// exactly by its text.
func venueColumn(t Table, v *Venue) (Column, error) {
	c, ok := t.Column(v.Column)
	if !ok {
		return Column{}, fmt.Errorf("sqlgen: venue column %q is not in table %q", v.Column, t.Name)
	}
	if c.Type != String || (c.Text != TextType && c.Text != TextCast) {
		return Column{}, fmt.Errorf("sqlgen: venue column %q of table %q is not a text column", c.Name, t.Name)
	}
	return c, checkCatalogName(c.Name)
}

// venueFilter writes the venue predicate: "v" IN (?, ...), with OR "v" IS NULL in
// parentheses when NULL is visible; "v" IS NULL alone when no venue is held; 0 = 1 when
// nothing is visible.
func (g *gen) venueFilter() {
	c, v := *g.venue, g.venueOpt
	switch {
	case len(v.Held) == 0 && !v.Null:
		g.b.WriteString("0 = 1")
		return
	case len(v.Held) == 0:
		g.ident(c.Name)
		g.b.WriteString(" IS NULL")
		return
	}
	if v.Null {
		g.b.WriteByte('(')
	}
	g.operand(c, useEqual)
	g.b.WriteString(" IN (")
	for i, h := range v.Held {
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.bind(h, "")
	}
	g.b.WriteByte(')')
	if v.Null {
		g.b.WriteString(" OR ")
		g.ident(c.Name)
		g.b.WriteString(" IS NULL)")
	}
}

// FilterVenue returns a copy of stmt, a select, update or delete on table t, whose WHERE
// is v's filter ANDed with the statement's own condition, written in IQL for a target that
// takes IQL rather than SQL (a Forwarder's upstream): "V IN [held...]" (with "OR V IS
// NULL" when v.Null), first, then the terms of the statement's AND, or its one condition.
// The column is written in the catalog's spelling. An insert is returned as it is (the
// policy checks the venues it writes). When no row is visible it returns ErrNoVenue. It
// does not check the result against any grammar: the target does.
func FilterVenue(t Table, stmt iql.Statement, v Venue) (iql.Statement, error) {
	if _, ok := stmt.(*iql.Insert); ok {
		return stmt, nil
	}
	c, err := venueColumn(t, &v)
	if err != nil {
		return nil, err
	}
	var filter iql.Expr
	isNull := &iql.Compare{Column: c.Name, Op: iql.OpIsNull}
	switch {
	case len(v.Held) == 0 && !v.Null:
		return nil, ErrNoVenue
	case len(v.Held) == 0:
		filter = isNull
	default:
		in := &iql.Compare{Column: c.Name, Op: iql.OpIn}
		for _, h := range v.Held {
			in.Values = append(in.Values, iql.StringLiteral(h))
		}
		filter = in
		if v.Null {
			filter = &iql.Or{Terms: []iql.Expr{in, isNull}}
		}
	}
	and := func(where iql.Expr) iql.Expr {
		switch w := where.(type) {
		case nil:
			return filter
		case *iql.And:
			return &iql.And{Terms: append([]iql.Expr{filter}, w.Terms...)}
		}
		return &iql.And{Terms: []iql.Expr{filter, where}}
	}
	switch s := stmt.(type) {
	case *iql.Select:
		out := *s
		out.Where = and(s.Where)
		return &out, nil
	case *iql.Update:
		out := *s
		out.Where = and(s.Where)
		return &out, nil
	case *iql.Delete:
		out := *s
		out.Where = and(s.Where)
		return &out, nil
	}
	return nil, fmt.Errorf("sqlgen: cannot filter a %T", stmt)
}
