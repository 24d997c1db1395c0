package sqlgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// bind adds v as the next argument and writes its placeholder, with cast (e.g. "numeric")
// on PostgreSQL when cast is not empty.
func (g *gen) bind(v any, cast string) {
	g.args = append(g.args, v)
	if g.d == SQLite {
		g.b.WriteByte('?')
		return
	}
	g.b.WriteByte('$')
	g.b.WriteString(strconv.Itoa(len(g.args)))
	if cast != "" {
		g.b.WriteString("::")
		g.b.WriteString(cast)
	}
}

// value binds literal l as a value of column c: a Boolean column takes only booleans (and
// NULL), other typed columns no booleans, DateTime and Binary columns no numbers, and a
// String column takes a number as its exact text, so that every engine compares and stores the same thing ("Values" in the package
// doc). A column of unknown type takes any literal as literal binds it.
func (g *gen) value(c Column, l iql.Literal) error {
	switch {
	case l.Kind == iql.KindNull:
	case c.Type == Boolean && l.Kind != iql.KindBool:
		return &StatementError{Msg: fmt.Sprintf("column %q is Boolean; it takes TRUE or FALSE, not a %s", c.Name, l.Kind)}
	case l.Kind == iql.KindBool && knownTypes[c.Type] && c.Type != Boolean:
		return &StatementError{Msg: fmt.Sprintf("column %q is %s; it cannot take a boolean", c.Name, c.Type)}
	case c.Type == String && l.Kind == iql.KindNumber:
		g.bind(l.Text, "")
		return nil
	case (c.Type == DateTime || c.Type == Binary) && l.Kind == iql.KindNumber:
		return &StatementError{Msg: fmt.Sprintf("column %q is %s; it cannot take a number", c.Name, c.Type)}
	case l.Kind == iql.KindNumber && c.Num.Kind != NumUnchecked && (c.Type == Integer || c.Type == Decimal):
		v, cast, why := c.Num.bindNumber(g.d, l.Text)
		if why != "" {
			return &StatementError{Msg: fmt.Sprintf("column %q (%s) cannot hold %s: %s", c.Name, c.Num.Name, shortNumber(l.Text), why)}
		}
		g.bind(v, cast)
		return nil
	}
	g.literal(l)
	return nil
}

// knownTypes are the column types that value applies its rules to.
var knownTypes = map[Type]bool{String: true, Integer: true, Decimal: true, DateTime: true, Boolean: true, Binary: true}

// literal binds a literal by the rules in the package documentation ("Values").
func (g *gen) literal(l iql.Literal) {
	switch l.Kind {
	case iql.KindString:
		g.bind(l.Text, "")
	case iql.KindBool:
		switch {
		case g.d == PostgreSQL:
			g.bind(l.Bool, "")
		case l.Bool:
			g.bind(int64(1), "")
		default:
			g.bind(int64(0), "")
		}
	case iql.KindNumber:
		v, cast := number(g.d, l.Text)
		g.bind(v, cast)
	default: // iql.KindNull; iql.Check excludes the rest
		g.bind(nil, "")
	}
}

// number converts a number literal's text to an argument and a PostgreSQL cast.
func number(d Dialect, text string) (any, string) {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, ""
	}
	if d == PostgreSQL {
		return text, "numeric"
	}
	canon := canonicalDecimal(text)
	if f, err := strconv.ParseFloat(text, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == canon {
		return f, ""
	}
	return text, ""
}

// canonicalDecimal writes a number literal's text as strconv.FormatFloat(f, 'f', -1, 64)
// would write the same value if it were exact: no leading zeros but one before the point, no
// trailing zeros after it, no point without a fraction ("-007.50" -> "-7.5", "1.0" -> "1").
func canonicalDecimal(text string) string {
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	intPart, frac, _ := strings.Cut(text, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	s := intPart
	if frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

// shortNumber is a number's text for a message, cut to 40 characters.
func shortNumber(text string) string {
	if len(text) > 40 {
		return text[:37] + "..."
	}
	return text
}
