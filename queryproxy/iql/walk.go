package iql

// Use says where a statement names a column.
type Use uint8

// The places a column can be named.
const (
	UseSelect Use = iota + 1 // the select list
	UseWhere                 // a WHERE condition (of any statement)
	UseOrder                 // ORDER BY
	UseSet                   // UPDATE's SET
	UseInsert                // INSERT's column list
)

// Writes reports whether the use changes the column (SET, INSERT).
func (u Use) Writes() bool { return u == UseSet || u == UseInsert }

// ColumnRef is one place where a statement names a column, the name as written.
type ColumnRef struct {
	Name string
	Use  Use
}

// Columns lists every column that stmt names, in statement order, with where it is named;
// a name used twice is listed twice. A SELECT with "*" (no Columns) lists no UseSelect
// reference: the policy decides what "every column" means for the caller.
func Columns(stmt Statement) []ColumnRef {
	var refs []ColumnRef
	add := func(name string, u Use) { refs = append(refs, ColumnRef{Name: name, Use: u}) }
	where := func(e Expr) {
		Inspect(e, func(x Expr) bool {
			if c, ok := x.(*Compare); ok {
				add(c.Column, UseWhere)
			}
			return true
		})
	}
	switch s := stmt.(type) {
	case *Select:
		for _, c := range s.Columns {
			add(c, UseSelect)
		}
		where(s.Where)
		for _, t := range s.OrderBy {
			add(t.Column, UseOrder)
		}
	case *Insert:
		for _, c := range s.Columns {
			add(c, UseInsert)
		}
	case *Update:
		for _, a := range s.Set {
			add(a.Column, UseSet)
		}
		where(s.Where)
	case *Delete:
		where(s.Where)
	}
	return refs
}

// Inspect walks e depth-first, calling f for each node; when f returns false it skips that
// node's children. A nil e is not visited.
func Inspect(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch x := e.(type) {
	case *And:
		for _, t := range x.Terms {
			Inspect(t, f)
		}
	case *Or:
		for _, t := range x.Terms {
			Inspect(t, f)
		}
	case *Not:
		Inspect(x.X, f)
	}
}
