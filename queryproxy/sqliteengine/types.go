package sqliteengine

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// declTypes memoizes columnType for the declared types seen (a schema has few), up to
// maxDeclTypes of them.
var (
	declTypes sync.Map // string -> sqlgen.Type
	declCount atomic.Int32
)

const maxDeclTypes = 1024

// columnType is the result Type of a column declared with the type decl, by SQLite's
// affinity rules and then by name (see the package documentation for the table).
func columnType(decl string) sqlgen.Type {
	if t, ok := declTypes.Load(decl); ok {
		return t.(sqlgen.Type)
	}
	t := declaredType(decl)
	if declCount.Add(1) <= maxDeclTypes {
		declTypes.Store(decl, t)
	}
	return t
}

// columnNumeric is what numbers a column declared with the type decl holds, by SQLite's
// affinity rules: an INTEGER-affinity column a 64-bit integer (SQLite would store a
// fraction, or one too large, as a REAL in it), a REAL- or NUMERIC-affinity one a finite
// double (SQLite turns a number beyond a double into infinity).
func columnNumeric(decl string) sqlgen.Numeric {
	switch columnType(decl) {
	case sqlgen.Integer:
		return sqlgen.NumInt64
	case sqlgen.Decimal:
		return sqlgen.NumFloat64
	}
	return sqlgen.Numeric{}
}

func declaredType(decl string) sqlgen.Type {
	d := strings.ToUpper(decl)
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(d, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("INT"):
		return sqlgen.Integer
	case has("CHAR", "CLOB", "TEXT"):
		return sqlgen.String
	case has("BLOB"):
		return sqlgen.Binary
	case has("REAL", "FLOA", "DOUB"):
		return sqlgen.Decimal
	case strings.TrimSpace(d) == "":
		return sqlgen.String
	// NUMERIC affinity from here on.
	case has("BOOL"):
		return sqlgen.Boolean
	case has("DATE", "TIME"):
		return sqlgen.DateTime
	}
	return sqlgen.Decimal
}
