package iqengine

import (
	"strings"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// Check reports why stmt is outside the upstream's documented grammar (docs/protocol.md,
// "Query service"), or "" when it is not (a string literal the upstream might read
// otherwise, checkLiteral, is outside it too):
// SELECT with a WHERE of comparisons joined by AND alone or OR alone,
// with =, IS NULL, >, >=, <, <=, BEGINS, CONTAINS, IN, LIKE, BETWEEN;
// INSERT of one row. ORDER BY, LIMIT, NOT, <>, IS NOT NULL, a mix of AND
// and OR (which needs parentheses), UPDATE and DELETE are ours only.
func Check(stmt iql.Statement) string {
	switch s := stmt.(type) {
	case *iql.Select:
		if len(s.OrderBy) > 0 {
			return "ORDER BY"
		}
		if s.Limit != nil {
			return "LIMIT"
		}
		return checkWhere(s.Where)
	case *iql.Insert:
		if len(s.Rows) != 1 {
			return "an INSERT of several rows"
		}
		for _, v := range s.Rows[0] {
			if what := checkLiteral(v); what != "" {
				return what
			}
		}
		return ""
	case *iql.Update:
		return "UPDATE"
	case *iql.Delete:
		return "DELETE"
	}
	return "this statement"
}

func checkWhere(e iql.Expr) string {
	var terms []iql.Expr
	switch x := e.(type) {
	case nil:
		return ""
	case *iql.Compare:
		terms = []iql.Expr{x}
	case *iql.And:
		terms = x.Terms
	case *iql.Or:
		terms = x.Terms
	case *iql.Not:
		return "NOT"
	}
	for _, t := range terms {
		c, ok := t.(*iql.Compare)
		if !ok {
			if _, not := t.(*iql.Not); not {
				return "NOT"
			}
			return "AND and OR together (parentheses)"
		}
		switch c.Op {
		case iql.OpNe:
			return "<>"
		case iql.OpIsNotNull:
			return "IS NOT NULL"
		}
		for _, v := range c.Values {
			if what := checkLiteral(v); what != "" {
				return what
			}
		}
	}
	return ""
}

// checkLiteral refuses a string the upstream might read otherwise
// than the service does: the upstream's grammar says only that strings go
// in single or double quotes, not how one holds its own quote, nor whether
// a backslash escapes (a lexer that reads \' as a quote inside the string
// would end it elsewhere, and read what follows as the statement's). So a
// forwarded string holds no backslash, no control character, and not both
// quotes: iql.Format then quotes it with the one it does not hold, and
// nothing in it is escaped.
func checkLiteral(v iql.Literal) string {
	if v.Kind != iql.KindString {
		return ""
	}
	switch {
	case strings.ContainsFunc(v.Text, func(r rune) bool { return r == '\\' || r < ' ' || r == 0x7f }):
		return "a string with a backslash or a control character"
	case strings.ContainsRune(v.Text, '\'') && strings.ContainsRune(v.Text, '"'):
		return "a string with both a single and a double quote"
	}
	return ""
}

// Check is the package's Check, for the handler (engine.Forwarder).
func (e *Engine) Check(stmt iql.Statement) string { return Check(stmt) }
