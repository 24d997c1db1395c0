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
		g.ident(c.Name)
		g.collate(c, x.Op != iql.OpEq && x.Op != iql.OpNe)
		g.b.WriteByte(' ')
		g.b.WriteString(x.Op.String())
		g.b.WriteByte(' ')
		return g.value(c, x.Values[0])
	case iql.OpIn:
		g.ident(c.Name)
		g.collate(c, false)
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
		g.ident(c.Name)
		g.collate(c, true)
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

// collate writes the collation that makes a text comparison byte-wise: on SQLite always
// (a column may be declared NOCASE), on PostgreSQL only for ordering, where the database's
// collation would otherwise apply (equality is byte-wise already; see the package doc).
func (g *gen) collate(c Column, ordering bool) {
	if c.Type != String {
		return
	}
	switch {
	case g.d == SQLite:
		g.b.WriteString(" COLLATE BINARY")
	case ordering:
		g.b.WriteString(` COLLATE "C"`)
	}
}
