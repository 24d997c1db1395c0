package iql

import (
	"fmt"
	"strconv"
)

// Check reports the first thing that makes stmt an invalid statement, as an *InvalidError,
// or nil. Parse's results and the New* constructors' always pass; a handler or policy that
// builds or edits an AST by hand calls Check (package sqlgen does, before it generates).
// Check tests shape, not bounds: names are valid identifiers and not repeated where SQL
// forbids it, lists are not empty, rows are as long as the column list, UPDATE and DELETE
// have a WHERE, And and Or have two terms or more, and each Compare has the values its
// operator needs.
func Check(stmt Statement) error {
	if err := check(stmt); err != "" {
		return &InvalidError{Where: "statement", Msg: err}
	}
	return nil
}

func check(stmt Statement) string {
	switch s := stmt.(type) {
	case *Select:
		if s == nil {
			return "nil statement"
		}
		if m := checkIdent("table", s.Table); m != "" {
			return m
		}
		if m := checkNames(s.Columns); m != "" {
			return m
		}
		if s.Where != nil {
			if m := checkExpr(s.Where); m != "" {
				return m
			}
		}
		for _, t := range s.OrderBy {
			if m := checkIdent("column", t.Column); m != "" {
				return m
			}
		}
		if s.Limit != nil && *s.Limit < 0 {
			return "LIMIT is negative"
		}
	case *Insert:
		if s == nil {
			return "nil statement"
		}
		if m := checkIdent("table", s.Table); m != "" {
			return m
		}
		if len(s.Columns) == 0 {
			return "INSERT has no columns"
		}
		if m := checkNames(s.Columns); m != "" {
			return m
		}
		if len(s.Rows) == 0 {
			return "INSERT has no rows"
		}
		for i, row := range s.Rows {
			if len(row) != len(s.Columns) {
				return fmt.Sprintf("row %d has %d values for %d columns", i+1, len(row), len(s.Columns))
			}
			for _, v := range row {
				if err := v.check(); err != nil {
					return err.Error()
				}
			}
		}
	case *Update:
		if s == nil {
			return "nil statement"
		}
		if m := checkIdent("table", s.Table); m != "" {
			return m
		}
		if len(s.Set) == 0 {
			return "UPDATE sets no column"
		}
		names := make([]string, len(s.Set))
		for i, a := range s.Set {
			if err := a.Value.check(); err != nil {
				return err.Error()
			}
			names[i] = a.Column
		}
		if m := checkNames(names); m != "" {
			return m
		}
		return checkWhere("UPDATE", s.Where)
	case *Delete:
		if s == nil {
			return "nil statement"
		}
		if m := checkIdent("table", s.Table); m != "" {
			return m
		}
		return checkWhere("DELETE", s.Where)
	default:
		return "not a statement"
	}
	return ""
}

func checkWhere(stmt string, e Expr) string {
	if e == nil {
		return stmt + " has no WHERE clause"
	}
	return checkExpr(e)
}

func checkIdent(what, name string) string {
	if !ValidIdent(name) {
		return what + " name " + quote(name) + " is not an identifier"
	}
	return ""
}

// checkNames checks a list of column names that may not repeat.
func checkNames(names []string) string {
	for i, n := range names {
		if m := checkIdent("column", n); m != "" {
			return m
		}
		for _, prev := range names[:i] {
			if equalFold(prev, n) {
				return "column " + quote(n) + " appears twice"
			}
		}
	}
	return ""
}

func checkExpr(e Expr) string {
	switch x := e.(type) {
	case *And:
		if x == nil {
			return "nil condition"
		}
		return checkTerms("AND", x.Terms)
	case *Or:
		if x == nil {
			return "nil condition"
		}
		return checkTerms("OR", x.Terms)
	case *Not:
		if x == nil || x.X == nil {
			return "NOT without a condition"
		}
		return checkExpr(x.X)
	case *Compare:
		if x == nil {
			return "nil condition"
		}
		return checkCompare(x)
	}
	return "not a condition"
}

func checkTerms(op string, terms []Expr) string {
	if len(terms) < 2 {
		return op + " has fewer than two terms"
	}
	for _, t := range terms {
		if m := checkExpr(t); m != "" {
			return m
		}
	}
	return ""
}

func checkCompare(c *Compare) string {
	if m := checkIdent("column", c.Column); m != "" {
		return m
	}
	if !c.Op.Valid() {
		return "invalid operator " + strconv.Itoa(int(c.Op))
	}
	min, max := c.Op.Arity()
	if n := len(c.Values); n < min || max >= 0 && n > max {
		return fmt.Sprintf("%s has %d values", c.Op, n)
	}
	for _, v := range c.Values {
		if err := v.check(); err != nil {
			return err.Error()
		}
		if v.Kind == KindNull {
			return c.Op.String() + " cannot compare with NULL"
		}
		if c.Op.Pattern() && v.Kind != KindString {
			return c.Op.String() + " needs a string"
		}
	}
	return ""
}
