package iql

// The default bounds. A statement within them parses in well under a millisecond and turns
// into fewer bind arguments than SQLite (32766) or PostgreSQL (65535) accept.
const (
	DefaultMaxBytes      = 64 << 10 // statement text, in bytes
	DefaultMaxDepth      = 32       // nesting of parentheses and NOTs in a condition
	DefaultMaxInList     = 1000     // values in one IN list
	DefaultMaxPredicates = 256      // predicates (Compare nodes) in a statement
	DefaultMaxRows       = 1000     // rows in one INSERT
	DefaultMaxColumns    = 256      // names in a select list, insert column list, SET or ORDER BY
	DefaultMaxIdentBytes = 128      // length of a table or column name, in bytes
	DefaultMaxLiteral    = 4096     // length of a string's value or a number's text, in bytes
	DefaultMaxValues     = 10000    // literals in a whole statement (each a bind argument)
)

// Limits bounds what Parse and the structured constructors accept. A zero field takes its
// Default* constant; a negative field is treated as zero, which refuses anything that the
// bound counts.
type Limits struct {
	MaxBytes      int
	MaxDepth      int
	MaxInList     int
	MaxPredicates int
	MaxRows       int
	MaxColumns    int
	MaxIdentBytes int
	MaxLiteral    int
	MaxValues     int
}

// withDefaults returns l with zero fields replaced by the defaults and negative ones by 0.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	def(&l.MaxBytes, DefaultMaxBytes)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxInList, DefaultMaxInList)
	def(&l.MaxPredicates, DefaultMaxPredicates)
	def(&l.MaxRows, DefaultMaxRows)
	def(&l.MaxColumns, DefaultMaxColumns)
	def(&l.MaxIdentBytes, DefaultMaxIdentBytes)
	def(&l.MaxLiteral, DefaultMaxLiteral)
	def(&l.MaxValues, DefaultMaxValues)
	return l
}
