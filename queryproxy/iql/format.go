package iql

import (
	"strconv"
	"strings"
)

// invalidIdent is what Format writes for a name that is not a valid identifier, so that the
// text fails to parse upstream instead of carrying whatever the name held.
const invalidIdent = "<invalid identifier>"

// Format prints stmt as canonical IQL: keywords upper-case, names as written, strings in
// single quotes with an inner single quote doubled, numbers as their exact text, IN lists in
// square brackets, and parentheses only where the tree needs them. For every statement that
// Parse returns, Parse(Format(stmt)) equals stmt.
//
// stmt should pass Check (Parse's results and the New* constructors' always do). Format never
// lets a value or a name change the statement's shape: strings are always re-quoted, and a
// name that is not a valid identifier is written as "<invalid identifier>", which no IQL
// parser accepts.
func Format(stmt Statement) string {
	var b strings.Builder
	f := &formatter{b: &b}
	switch s := stmt.(type) {
	case *Select:
		f.selectStmt(s)
	case *Insert:
		f.insertStmt(s)
	case *Update:
		f.updateStmt(s)
	case *Delete:
		b.WriteString("DELETE FROM ")
		f.ident(s.Table)
		f.where(s.Where)
	default:
		b.WriteString("<invalid statement>")
	}
	return b.String()
}

type formatter struct{ b *strings.Builder }

func (f *formatter) ident(name string) {
	if !ValidIdent(name) {
		name = invalidIdent
	}
	f.b.WriteString(name)
}

func (f *formatter) idents(names []string) {
	for i, n := range names {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.ident(n)
	}
}

func (f *formatter) selectStmt(s *Select) {
	f.b.WriteString("SELECT ")
	if len(s.Columns) == 0 {
		f.b.WriteString("*")
	} else {
		f.idents(s.Columns)
	}
	f.b.WriteString(" FROM ")
	f.ident(s.Table)
	f.where(s.Where)
	for i, t := range s.OrderBy {
		if i == 0 {
			f.b.WriteString(" ORDER BY ")
		} else {
			f.b.WriteString(", ")
		}
		f.ident(t.Column)
		if t.Desc {
			f.b.WriteString(" DESC")
		}
	}
	if s.Limit != nil {
		f.b.WriteString(" LIMIT ")
		if *s.Limit < 0 {
			f.b.WriteString("<invalid limit>")
		} else {
			f.b.WriteString(strconv.FormatInt(*s.Limit, 10))
		}
	}
}

func (f *formatter) insertStmt(s *Insert) {
	f.b.WriteString("INSERT INTO ")
	f.ident(s.Table)
	f.b.WriteString(" (")
	f.idents(s.Columns)
	f.b.WriteString(") VALUES ")
	for i, row := range s.Rows {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.literals('(', row, ')')
	}
}

func (f *formatter) updateStmt(s *Update) {
	f.b.WriteString("UPDATE ")
	f.ident(s.Table)
	f.b.WriteString(" SET ")
	for i, a := range s.Set {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.ident(a.Column)
		f.b.WriteString(" = ")
		f.literal(a.Value)
	}
	f.where(s.Where)
}

func (f *formatter) where(e Expr) {
	if e != nil {
		f.b.WriteString(" WHERE ")
		f.expr(e)
	}
}

// expr prints e. A term is parenthesized when it is an Or inside an And or a Not, or when it
// is the same kind of node as its parent (which only an explicit parenthesis produces).
func (f *formatter) expr(e Expr) {
	switch x := e.(type) {
	case *Or:
		f.terms(x.Terms, " OR ", func(t Expr) bool { _, or := t.(*Or); return or })
	case *And:
		f.terms(x.Terms, " AND ", func(t Expr) bool {
			switch t.(type) {
			case *And, *Or:
				return true
			}
			return false
		})
	case *Not:
		f.b.WriteString("NOT ")
		switch x.X.(type) {
		case *And, *Or:
			f.paren(x.X)
		default:
			f.expr(x.X)
		}
	case *Compare:
		f.compare(x)
	default:
		f.b.WriteString("<invalid condition>")
	}
}

func (f *formatter) terms(terms []Expr, sep string, needParen func(Expr) bool) {
	for i, t := range terms {
		if i > 0 {
			f.b.WriteString(sep)
		}
		if needParen(t) {
			f.paren(t)
		} else {
			f.expr(t)
		}
	}
}

func (f *formatter) paren(e Expr) {
	f.b.WriteByte('(')
	f.expr(e)
	f.b.WriteByte(')')
}

func (f *formatter) compare(c *Compare) {
	f.ident(c.Column)
	f.b.WriteByte(' ')
	f.b.WriteString(c.Op.String())
	switch c.Op {
	case OpIsNull, OpIsNotNull:
	case OpIn:
		f.b.WriteByte(' ')
		f.literals('[', c.Values, ']')
	case OpBetween:
		for i, v := range c.Values {
			if i > 0 {
				f.b.WriteString(" AND")
			}
			f.b.WriteByte(' ')
			f.literal(v)
		}
	default:
		for _, v := range c.Values {
			f.b.WriteByte(' ')
			f.literal(v)
		}
	}
}

func (f *formatter) literals(open byte, vals []Literal, closing byte) {
	f.b.WriteByte(open)
	for i, v := range vals {
		if i > 0 {
			f.b.WriteString(", ")
		}
		f.literal(v)
	}
	f.b.WriteByte(closing)
}

// literal prints one value. A string goes in single quotes, or in double quotes when it
// holds a single quote and no double one, so that nothing in it needs escaping; one that
// holds both goes in single quotes, each single quote inside doubled (the service's
// handler forwards no such string: the upstream's grammar does not say how it reads one).
// Nothing else is escaped.
func (f *formatter) literal(v Literal) {
	switch v.Kind {
	case KindString:
		q := byte('\'')
		if strings.ContainsRune(v.Text, '\'') && !strings.ContainsRune(v.Text, '"') {
			q = '"'
		}
		f.b.WriteByte(q)
		f.b.WriteString(strings.ReplaceAll(v.Text, string(q), string(q)+string(q)))
		f.b.WriteByte(q)
	case KindNumber:
		if validNumber(v.Text) {
			f.b.WriteString(v.Text)
		} else {
			f.b.WriteString("<invalid number>")
		}
	case KindBool:
		if v.Bool {
			f.b.WriteString("TRUE")
		} else {
			f.b.WriteString("FALSE")
		}
	case KindNull:
		f.b.WriteString("NULL")
	default:
		f.b.WriteString("<invalid value>")
	}
}
