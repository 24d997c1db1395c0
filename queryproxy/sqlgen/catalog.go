package sqlgen

// Type is the type of a column as the query service reports it in a result's Columns.
type Type string

// The column types of a query result.
const (
	String   Type = "String"
	Integer  Type = "Integer"
	Decimal  Type = "Decimal"
	Boolean  Type = "Boolean"
	DateTime Type = "DateTime"
	Binary   Type = "Binary"
)

// Column is one column of a table, named exactly as the engine reports it.
type Column struct {
	Name string
	Type Type
}

// Table is one table of the catalog, named exactly as the engine reports it.
type Table struct {
	Name    string
	Columns []Column
}

// Column finds a column by name, ignoring case (ASCII only, as the upstream's .NET router
// does for route segments). The boolean is false when the table has no such column.
func (t Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// Catalog is what an engine reports about its tables: the only source of identifiers that
// may appear in generated SQL.
type Catalog struct {
	Tables []Table
}

// Table finds a table by name, ignoring case. The boolean is false when there is none.
func (c Catalog) Table(name string) (Table, bool) {
	for _, t := range c.Tables {
		if EqualFold(t.Name, name) {
			return t, true
		}
	}
	return Table{}, false
}

// Statement is SQL text with its bind arguments, ready for database/sql or pgx.
type Statement struct {
	SQL  string
	Args []any
	// Columns are, for a SELECT, the result columns in select-list order, named and typed
	// as the catalog has them ("*" lists every column of the table in catalog order); nil
	// for the other statements. A handler builds a result's Columns from them.
	Columns []Column
}

// EqualFold reports whether a and b are equal ignoring ASCII case only. Unlike
// strings.EqualFold it does not fold Unicode: "ſ" (U+017F) is not "s" and "K" (U+212A, the
// Kelvin sign) is not "k", so a look-alike name never resolves to a catalog identifier.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Dialect names the SQL dialect that a statement is generated for. Each engine reports its
// own; sqlgen knows how each one quotes identifiers, writes placeholders and escapes
// patterns.
type Dialect string

// The SQL dialects sqlgen generates.
const (
	SQLite     Dialect = "sqlite"
	PostgreSQL Dialect = "postgresql"
)
