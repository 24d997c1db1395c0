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
	// Generated is true for a column the database computes (a generated column, an
	// identity column that is always assigned): never written.
	Generated bool
	// Text is how PostgreSQL compares the column's values when Type is String (see the
	// package doc); SQLite ignores it. The zero value is a text type's.
	Text Text
	// Nondeterministic is true for a PostgreSQL String column whose collation is
	// nondeterministic (an ICU collation that ignores case, say), under which "="
	// finds strings that differ: its comparisons, the owner filter's included, are
	// then made under COLLATE "C", so "=" is exact as on every engine.
	Nondeterministic bool
	// Num is what numbers an Integer or Decimal column holds: a number value the column
	// cannot hold is refused (*StatementError). The zero value checks nothing.
	Num Numeric
}

// Text is how sqlgen compares the values of a String column on PostgreSQL, where the
// column's type decides which comparisons it has: a text type's are its own, under
// COLLATE "C" where text is ordered; most others have none by their text.
type Text uint8

const (
	// TextType is text, varchar and char(n): the column itself, with COLLATE "C" where
	// text is ordered or matched (char(n) compares as PostgreSQL compares it, trailing
	// spaces aside).
	TextType Text = iota
	// TextUUID is uuid: the column itself where it is compared or ordered (a uuid's
	// order is that of its text, byte-wise: lower-case hex digits in fixed places, so the
	// column's index serves), its text where it is matched by a pattern. A value is read
	// as a uuid, so "=" also finds the row for another spelling of its uuid (upper-case,
	// braces, no hyphens); a value that is not a uuid is the database's error (a 400).
	// As an owner column it takes an owner that is a uuid spelled as a result shows it
	// (lower-case, hyphenated), and no other (Generate's *StatementError).
	TextUUID
	// TextCast is any other type reported as String but inet (json, jsonb, enums, cidr,
	// interval, arrays, name, "char", citext...): every comparison reads the column as
	// its text, "c"::text, the text a result shows (each of these types' cast to text
	// is its output function's text), so the comparison rules hold for it as for a text
	// column; an index on the column itself does not serve such a comparison (an index
	// on ("c"::text) does).
	TextCast
	// TextInet is inet, whose cast to text always adds the netmask (10.0.0.9/32) where
	// a result shows none (10.0.0.9): as TextCast, with abbrev("c"), the text a result
	// shows.
	TextInet
)

// Table is one table of the catalog, named exactly as the engine reports it.
type Table struct {
	Name    string
	Columns []Column
}

// Column finds a column by name: the one spelled exactly so, else the one spelled so
// ignoring case (ASCII only, as the upstream's .NET router does for route segments). The
// boolean is false when the table has no such column, or several that differ in case
// alone and none spelled exactly so (PostgreSQL's quoted names may): an ambiguous name
// resolves to none, never to whichever comes first.
func (t Table) Column(name string) (Column, bool) {
	if i := find(len(t.Columns), func(i int) string { return t.Columns[i].Name }, name); i >= 0 {
		return t.Columns[i], true
	}
	return Column{}, false
}

// Catalog is what an engine reports about its tables: the only source of identifiers that
// may appear in generated SQL.
type Catalog struct {
	Tables []Table
}

// Table finds a table by name as Table.Column finds a column: spelled exactly so, else
// the only one spelled so ignoring case. The boolean is false when there is none, or an
// ambiguous name.
func (c Catalog) Table(name string) (Table, bool) {
	if i := find(len(c.Tables), func(i int) string { return c.Tables[i].Name }, name); i >= 0 {
		return c.Tables[i], true
	}
	return Table{}, false
}

// find is the index, among the n names that name(i) gives, of the one spelled exactly
// as want, else of the only one equal to it ignoring ASCII case; -1 when there is none
// or several (and none exact).
func find(n int, name func(int) string, want string) int {
	folded := -1
	for i := range n {
		switch got := name(i); {
		case got == want:
			return i
		case EqualFold(got, want) && folded == -1:
			folded = i
		case EqualFold(got, want):
			folded = -2 // several
		}
	}
	return max(folded, -1)
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
