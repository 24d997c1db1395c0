package sqlgen

import (
	"fmt"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// expr writes a condition. Every And or Or inside another node is parenthesized, NOT's
// operand always is, and BETWEEN is, so that no precedence rule is left to the reader.
func (g *gen) expr(e iql.Expr) error {
	switch x := e.(type) {
	case *iql.And:
		return g.terms(x.Terms, " AND ")
	case *iql.Or:
		return g.terms(x.Terms, " OR ")
	case *iql.Not:
		g.b.WriteString("NOT (")
		if err := g.expr(x.X); err != nil {
			return err
		}
		g.b.WriteByte(')')
		return nil
	case *iql.Compare:
		return g.compare(x)
	}
	return errInternal
}

func (g *gen) terms(terms []iql.Expr, sep string) error {
	for i, t := range terms {
		if i > 0 {
			g.b.WriteString(sep)
		}
		switch t.(type) {
		case *iql.And, *iql.Or:
			g.b.WriteByte('(')
			if err := g.expr(t); err != nil {
				return err
			}
			g.b.WriteByte(')')
		default:
			if err := g.expr(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// compare writes one predicate by the comparison rules of the package documentation.
func (g *gen) compare(x *iql.Compare) error {
	c, err := g.column(x.Column)
	if err != nil {
		return err
	}
	if x.Op.Pattern() {
		if c.Type != String {
			return &StatementError{Msg: fmt.Sprintf("%s needs a String column; %q is %s", x.Op, c.Name, c.Type)}
		}
		g.pattern(c, x.Op, x.Values[0].Text)
		return nil
	}
	switch x.Op {
	case iql.OpIsNull, iql.OpIsNotNull:
		g.ident(c.Name)
		g.b.WriteByte(' ')
		g.b.WriteString(x.Op.String())
	case iql.OpEq, iql.OpNe, iql.OpLt, iql.OpLe, iql.OpGt, iql.OpGe:
		use := useOrder
		if x.Op == iql.OpEq || x.Op == iql.OpNe {
			use = useEqual
		}
		g.operand(c, use)
		g.b.WriteByte(' ')
		g.b.WriteString(x.Op.String())
		g.b.WriteByte(' ')
		return g.value(c, x.Values[0])
	case iql.OpIn:
		g.operand(c, useEqual)
		g.b.WriteString(" IN (")
		for i, v := range x.Values {
			if i > 0 {
				g.b.WriteString(", ")
			}
			if err := g.value(c, v); err != nil {
				return err
			}
		}
		g.b.WriteByte(')')
	case iql.OpBetween:
		g.b.WriteByte('(')
		g.operand(c, useOrder)
		g.b.WriteString(" BETWEEN ")
		if err := g.value(c, x.Values[0]); err != nil {
			return err
		}
		g.b.WriteString(" AND ")
		if err := g.value(c, x.Values[1]); err != nil {
			return err
		}
		g.b.WriteByte(')')
	default:
		return errInternal
	}
	return nil
}

// use is what a comparison does with a column's text: test it for equality, order it,
// or match it with a pattern.
type use uint8

const (
	useEqual use = iota
	useOrder
	usePattern
)

// operand writes column c as the operand of a comparison that uses it so, with the cast
// and collation that make the comparison follow the rules of the package doc: on SQLite,
// COLLATE BINARY on every String column but in a pattern (GLOB is byte-wise, and a
// column may be declared NOCASE); on PostgreSQL, by c.Text, COLLATE "C" wherever text is
// ordered or matched (the database's collation would apply otherwise; equality is
// byte-wise already).
func (g *gen) operand(c Column, u use) {
	if c.Type != String {
		g.ident(c.Name)
		return
	}
	if g.d == SQLite {
		g.ident(c.Name)
		if u != usePattern {
			g.b.WriteString(" COLLATE BINARY")
		}
		return
	}
	switch {
	case c.Text == TextInet:
		g.b.WriteString("abbrev(")
		g.ident(c.Name)
		g.b.WriteByte(')')
	case c.Text == TextCast, c.Text == TextUUID && u == usePattern:
		g.ident(c.Name)
		g.b.WriteString("::text")
	case c.Text == TextUUID:
		g.ident(c.Name)
		return
	default:
		g.ident(c.Name)
	}
	if u != useEqual || c.Nondeterministic {
		// An equality of a deterministic collation is byte-wise already, and
		// without COLLATE the column's index serves it; a nondeterministic one's
		// is not.
		g.b.WriteString(` COLLATE "C"`)
	}
}
