package sqlgen

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// Options are what the policy adds to a statement. The zero Options adds nothing.
type Options struct {
	// Owner, when set, confines the statement to the rows of one owner (a per-user table).
	// See "Owner and row limit" in the package documentation.
	Owner *Owner
	// Venue, when set, confines a SELECT, UPDATE or DELETE to the rows of the venues a
	// caller holds (a market-data table). See "Venue" in the package documentation.
	Venue *Venue
	// MaxRows, when above zero, caps a SELECT at MaxRows+1 rows, so that the caller can tell
	// "exactly MaxRows" from "more than MaxRows". It does not apply to other statements.
	MaxRows int
	// RowCheck, when set, names an SQL function of one argument that a SELECT's WHERE
	// calls first, so on every row the statement reads, before any other term (a SELECT
	// without a WHERE returns every row it reads, so it has no call): its
	// argument is a RowCheckArg, which the engine replaces, and a row the function answers
	// with an error ends the statement with it. The engine's (Engine.RowCheck), for a
	// limit it must hold while a statement runs: the SQLite engine's statement time limit
	// on a statement whose first row is out (its driver interrupts only the first). The
	// name is the engine's, never a request's. It does not apply to other statements.
	RowCheck string
}

// RowCheckArg is the argument of a RowCheck call, as Generate binds it: a placeholder
// the engine replaces with its own value.
type RowCheckArg struct{}

// Owner names the column that holds a row's owner and the owner of this request.
type Owner struct {
	// Column is the owner column's name, resolved against the table like any column; a
	// table without it is a configuration error (a plain error, not an *UnknownError).
	Column string
	// Value is the owner, usually the token's subject; it is passed as a bind argument as
	// is, so it must be a type the driver takes (a string, for a subject).
	Value any
}

// maxArgs is the number of bind arguments each dialect accepts in one statement.
var maxArgs = map[Dialect]int{SQLite: 32766, PostgreSQL: 65535}

// Generate writes stmt as SQL for dialect d, resolving every name against cat and adding
// what opts asks for. stmt must pass iql.Check; Generate checks it again.
//
// Errors: *UnknownError for a table or column the catalog lacks; *StatementError for a
// statement the client cannot have (see its doc); any other error is the caller's or the
// configuration's fault (an invalid AST, an unknown dialect, an owner column the table
// lacks).
func Generate(d Dialect, cat Catalog, stmt iql.Statement, opts Options) (Statement, error) {
	if _, ok := maxArgs[d]; !ok {
		return Statement{}, fmt.Errorf("sqlgen: unknown dialect %q", d)
	}
	if err := iql.Check(stmt); err != nil {
		return Statement{}, fmt.Errorf("sqlgen: %w", err)
	}
	t, ok := cat.Table(stmt.TableName())
	if !ok {
		return Statement{}, &UnknownError{Kind: "table", Name: stmt.TableName()}
	}
	if err := checkCatalogName(t.Name); err != nil {
		return Statement{}, err
	}
	g := &gen{d: d, t: t}
	if _, ok := stmt.(*iql.Select); ok && opts.RowCheck != "" {
		if !plainName(opts.RowCheck) {
			return Statement{}, fmt.Errorf("sqlgen: row check %q is not a plain function name", opts.RowCheck)
		}
		g.rowCheck = opts.RowCheck
	}
	if opts.Owner != nil {
		c, ok := t.Column(opts.Owner.Column)
		if !ok {
			return Statement{}, fmt.Errorf("sqlgen: owner column %q is not in table %q", opts.Owner.Column, t.Name)
		}
		if err := checkCatalogName(c.Name); err != nil {
			return Statement{}, err
		}
		if v, ok := opts.Owner.Value.(string); ok && d == PostgreSQL && c.Type == String && c.Text == TextUUID && !canonicalUUID(v) {
			// PostgreSQL would read another spelling of a uuid as the one it spells,
			// whose rows are another owner's.
			return Statement{}, &StatementError{Err: ErrOwnerUnusable,
				Msg: fmt.Sprintf("the owner column %q is a uuid, and the caller's subject is not a uuid spelled as the column shows one (lower-case, hyphenated): the caller owns none of the table's rows", c.Name)}
		}
		g.owner, g.ownerValue = &c, opts.Owner.Value
	}
	if opts.Venue != nil {
		if _, ok := stmt.(*iql.Insert); !ok {
			c, err := venueColumn(t, opts.Venue)
			if err != nil {
				return Statement{}, err
			}
			g.venue, g.venueOpt = &c, *opts.Venue
		}
	}
	var err error
	switch s := stmt.(type) {
	case *iql.Select:
		err = g.selectStmt(s, opts.MaxRows)
	case *iql.Insert:
		err = g.insertStmt(s)
	case *iql.Update:
		err = g.updateStmt(s)
	case *iql.Delete:
		g.b.WriteString("DELETE FROM ")
		g.ident(t.Name)
		err = g.where(s.Where)
	}
	if err != nil {
		return Statement{}, err
	}
	if len(g.args) > maxArgs[d] {
		return Statement{}, &StatementError{Msg: fmt.Sprintf("statement has %d values; %s takes at most %d", len(g.args), d, maxArgs[d]), Err: iql.ErrTooLarge}
	}
	return Statement{SQL: g.b.String(), Args: g.args, Columns: g.columns}, nil
}

// canonicalUUID reports whether s is a uuid as PostgreSQL prints one: 32 lower-case hex
// digits in groups of 8, 4, 4, 4 and 12, hyphenated.
func canonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	return true
}

// gen writes one statement.
type gen struct {
	d          Dialect
	t          Table
	owner      *Column // nil: no owner predicate
	ownerValue any
	venue      *Column // nil: no venue filter
	venueOpt   Venue
	rowCheck   string // a function WHERE calls first (Options.RowCheck); "" for none
	b          strings.Builder
	args       []any
	columns    []Column
}

// column resolves a column name of the statement's table.
func (g *gen) column(name string) (Column, error) {
	c, ok := g.t.Column(name)
	if !ok {
		return Column{}, &UnknownError{Kind: "column", Name: name, Table: g.t.Name}
	}
	return c, checkCatalogName(c.Name)
}

// columnList resolves a list of names that may not repeat (the select list, INSERT's columns,
// SET), refusing two names that are the same column.
func (g *gen) columnList(names []string) ([]Column, error) {
	cols := make([]Column, 0, len(names))
	for _, n := range names {
		c, err := g.column(n)
		if err != nil {
			return nil, err
		}
		for _, prev := range cols {
			if prev.Name == c.Name {
				return nil, &StatementError{Msg: fmt.Sprintf("column %q is named twice", c.Name)}
			}
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// plainName reports whether name is a letter or underscore then letters, digits and
// underscores (ASCII), written unquoted.
func plainName(name string) bool {
	for i, c := range []byte(name) {
		if c != '_' && (c|0x20 < 'a' || c|0x20 > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}

// checkCatalogName refuses catalog names that no dialect can quote.
func checkCatalogName(name string) error {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("sqlgen: catalog name %q cannot be quoted", name)
	}
	return nil
}

func (g *gen) selectStmt(s *iql.Select, maxRows int) error {
	cols := g.t.Columns
	if len(s.Columns) > 0 {
		var err error
		if cols, err = g.columnList(s.Columns); err != nil {
			return err
		}
	}
	if len(cols) == 0 {
		return fmt.Errorf("sqlgen: table %q has no columns in the catalog", g.t.Name)
	}
	g.columns = cols
	g.b.WriteString("SELECT ")
	for i, c := range cols {
		if err := checkCatalogName(c.Name); err != nil {
			return err
		}
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.ident(c.Name)
	}
	g.b.WriteString(" FROM ")
	g.ident(g.t.Name)
	if err := g.where(s.Where); err != nil {
		return err
	}
	for i, o := range s.OrderBy {
		c, err := g.column(o.Column)
		if err != nil {
			return err
		}
		if i == 0 {
			g.b.WriteString(" ORDER BY ")
		} else {
			g.b.WriteString(", ")
		}
		g.operand(c, useOrder)
		if o.Desc {
			g.b.WriteString(" DESC NULLS FIRST")
		} else {
			g.b.WriteString(" ASC NULLS LAST")
		}
	}
	limit, has := int64(0), false
	if s.Limit != nil {
		limit, has = *s.Limit, true
	}
	if maxRows > 0 && (!has || limit > int64(maxRows)) {
		limit, has = int64(maxRows), true
		if limit < math.MaxInt64 {
			limit++
		}
	}
	if has {
		g.b.WriteString(" LIMIT ")
		g.bind(limit, "")
	}
	return nil
}

func (g *gen) insertStmt(s *iql.Insert) error {
	cols, err := g.columnList(s.Columns)
	if err != nil {
		return err
	}
	if g.owner != nil {
		for _, c := range cols {
			if c.Name == g.owner.Name {
				return errOwnerWrite(c)
			}
		}
		cols = append(cols, *g.owner)
	}
	g.b.WriteString("INSERT INTO ")
	g.ident(g.t.Name)
	g.b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.ident(c.Name)
	}
	g.b.WriteString(") VALUES ")
	for i, row := range s.Rows {
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.b.WriteByte('(')
		for j, v := range row {
			if j > 0 {
				g.b.WriteString(", ")
			}
			if err := g.value(cols[j], v); err != nil {
				return err
			}
		}
		if g.owner != nil {
			g.b.WriteString(", ")
			g.bind(g.ownerValue, "")
		}
		g.b.WriteByte(')')
	}
	return nil
}

func errOwnerWrite(c Column) error {
	return &StatementError{Msg: fmt.Sprintf("column %q holds the row's owner and is set by the gateway", c.Name)}
}

func (g *gen) updateStmt(s *iql.Update) error {
	names := make([]string, len(s.Set))
	for i, a := range s.Set {
		names[i] = a.Column
	}
	cols, err := g.columnList(names)
	if err != nil {
		return err
	}
	g.b.WriteString("UPDATE ")
	g.ident(g.t.Name)
	g.b.WriteString(" SET ")
	for i, c := range cols {
		if g.owner != nil && c.Name == g.owner.Name {
			return errOwnerWrite(c)
		}
		if i > 0 {
			g.b.WriteString(", ")
		}
		g.ident(c.Name)
		g.b.WriteString(" = ")
		if err := g.value(c, s.Set[i].Value); err != nil {
			return err
		}
	}
	return g.where(s.Where)
}

// where writes the WHERE clause: the owner predicate and the venue filter, if any, ANDed
// with the statement's condition in parentheses.
func (g *gen) where(e iql.Expr) error {
	if e == nil && g.owner == nil && g.venue == nil {
		return nil
	}
	g.b.WriteString(" WHERE ")
	if g.rowCheck != "" {
		// First: SQLite evaluates the terms a row is tested with in order, and stops at
		// the first false one.
		g.b.WriteString(g.rowCheck)
		g.b.WriteByte('(')
		g.bind(RowCheckArg{}, "")
		g.b.WriteString(") AND (")
		defer g.b.WriteByte(')')
	}
	policy := false
	if g.owner != nil {
		g.operand(*g.owner, useEqual)
		g.b.WriteString(" = ")
		g.bind(g.ownerValue, "")
		policy = true
	}
	if g.venue != nil {
		if policy {
			g.b.WriteString(" AND ")
		}
		g.venueFilter()
		policy = true
	}
	if e == nil {
		return nil
	}
	if policy {
		g.b.WriteString(" AND (")
		defer g.b.WriteByte(')')
	}
	return g.expr(e)
}

// ident writes a catalog name quoted: "Name", an inner " doubled (both dialects).
func (g *gen) ident(name string) {
	g.b.WriteByte('"')
	g.b.WriteString(strings.ReplaceAll(name, `"`, `""`))
	g.b.WriteByte('"')
}

// errInternal marks a state that iql.Check should have excluded.
var errInternal = errors.New("sqlgen: internal error: statement passed iql.Check but cannot be generated")
