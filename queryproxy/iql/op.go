package iql

// Op is a predicate's comparison operator.
type Op uint8

// The comparison operators. Their meaning on each SQL engine is defined once, in package
// sqlgen's documentation.
const (
	OpEq        Op = iota + 1 // =
	OpNe                      // <> (also written !=)
	OpLt                      // <
	OpLe                      // <=
	OpGt                      // >
	OpGe                      // >=
	OpBegins                  // BEGINS: the column starts with a string
	OpContains                // CONTAINS: the column contains a string
	OpLike                    // LIKE: the column matches a pattern, "*" being the wildcard
	OpIn                      // IN: the column equals one of a list of values
	OpBetween                 // BETWEEN a AND b, both ends included
	OpIsNull                  // IS NULL
	OpIsNotNull               // IS NOT NULL
)

var opNames = [...]string{
	OpEq:        "=",
	OpNe:        "<>",
	OpLt:        "<",
	OpLe:        "<=",
	OpGt:        ">",
	OpGe:        ">=",
	OpBegins:    "BEGINS",
	OpContains:  "CONTAINS",
	OpLike:      "LIKE",
	OpIn:        "IN",
	OpBetween:   "BETWEEN",
	OpIsNull:    "IS NULL",
	OpIsNotNull: "IS NOT NULL",
}

// String returns the operator's canonical IQL spelling ("=", "<>", "LIKE", "IS NOT NULL").
func (o Op) String() string {
	if o.Valid() {
		return opNames[o]
	}
	return "invalid operator"
}

// Valid reports whether o is one of the declared operators.
func (o Op) Valid() bool { return o >= OpEq && o <= OpIsNotNull }

// Arity says how many values a Compare with this operator holds: min and max, max being -1
// for "no upper bound" (IN).
func (o Op) Arity() (min, max int) {
	switch o {
	case OpIsNull, OpIsNotNull:
		return 0, 0
	case OpBetween:
		return 2, 2
	case OpIn:
		return 1, -1
	}
	return 1, 1
}

// Pattern reports whether the operator matches text (BEGINS, CONTAINS, LIKE): its values
// must be strings.
func (o Op) Pattern() bool { return o == OpBegins || o == OpContains || o == OpLike }

// OperatorByName finds an operator by the name a structured criterion's Operator member
// gives it. Names are the text language's, ASCII case-insensitive, with single spaces:
// "=", "<>", "!=", "<", "<=", ">", ">=", "BEGINS", "CONTAINS", "LIKE", "IN", "BETWEEN",
// "IS NULL", "IS NOT NULL". "IS" and "IS NOT" are not operators by themselves: NewCompare
// accepts them with a null value.
func OperatorByName(name string) (Op, bool) {
	if name == "!=" {
		return OpNe, true
	}
	for o := OpEq; o <= OpIsNotNull; o++ {
		if equalFold(opNames[o], name) {
			return o, true
		}
	}
	return 0, false
}

// equalFold reports whether a and b are equal ignoring ASCII case only (as sqlgen.EqualFold
// does; iql cannot import sqlgen).
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
