package iql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file builds ASTs from the structured endpoints' JSON, so that they and the text
// endpoint share one AST, one set of bounds and one set of checks.

// Criterion is one element of a structured select's criteria array (docs/api-surface.md §2.7),
// [{"ColumnName": "Code", "Operator": "=", "Value": "BHP"}], as decoded from JSON.
type Criterion struct {
	ColumnName string
	Operator   string
	Value      any
}

// LiteralOf converts one decoded JSON value into a literal:
//
//   - string -> a string literal (valid UTF-8, no NUL, at most MaxLiteral bytes);
//   - json.Number -> a number literal with the same text; an exponent is written out in
//     plain decimal ("1.5e3" -> "1500", "1e-7" -> "0.0000001"), refused when that would be
//     longer than MaxLiteral;
//   - float64 (a decoder without UseNumber), int, int64 -> a number literal with the shortest
//     text that reads back as the same value; NaN and infinities are refused;
//   - bool -> TRUE or FALSE;
//   - nil (JSON null) -> NULL.
//
// Arrays and objects are refused here; NewCompare takes arrays for IN and BETWEEN.
func LiteralOf(v any, lim Limits) (Literal, error) {
	lim = lim.withDefaults()
	l, msg, tooLarge := literalOf(v, lim)
	if msg != "" {
		return Literal{}, invalid("value", msg, tooLarge)
	}
	return l, nil
}

func invalid(where, msg string, tooLarge bool) *InvalidError {
	e := &InvalidError{Where: where, Msg: msg}
	if tooLarge {
		e.Err = ErrTooLarge
	}
	return e
}

func literalOf(v any, lim Limits) (l Literal, msg string, tooLarge bool) {
	var text string
	switch x := v.(type) {
	case nil:
		return NullLiteral(), "", false
	case bool:
		return BoolLiteral(x), "", false
	case string:
		if len(x) > lim.MaxLiteral {
			return Literal{}, fmt.Sprintf("string longer than %d bytes", lim.MaxLiteral), true
		}
		l = StringLiteral(x)
		if err := l.check(); err != nil {
			return Literal{}, err.Error(), false
		}
		return l, "", false
	case json.Number:
		if text, msg, tooLarge = plainDecimal(string(x), lim.MaxLiteral); msg != "" {
			return Literal{}, msg, tooLarge
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Literal{}, "a number must be finite", false
		}
		text = strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		text = strconv.Itoa(x)
	case int64:
		text = strconv.FormatInt(x, 10)
	default:
		return Literal{}, fmt.Sprintf("a value must be a string, number, boolean or null, not %T", v), false
	}
	if len(text) > lim.MaxLiteral {
		return Literal{}, fmt.Sprintf("number longer than %d bytes", lim.MaxLiteral), true
	}
	return Literal{Kind: KindNumber, Text: text}, "", false
}

// plainDecimal checks that s is a JSON number and writes it without an exponent, the
// digits unchanged; the message is empty when it succeeds.
func plainDecimal(s string, max int) (out, msg string, tooLarge bool) {
	notJSON := quote(s) + " is not a JSON number"
	tooLong := fmt.Sprintf("number %s is longer than %d bytes written out", quote(s), max)
	body := strings.TrimPrefix(s, "-")
	mant, expText, hasExp := strings.Cut(strings.ToLower(body), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if !validNumber(mant) || mant[0] == '-' || len(intPart) > 1 && intPart[0] == '0' {
		return "", notJSON, false
	}
	if !hasExp {
		return s, "", false
	}
	neg := strings.HasPrefix(expText, "-")
	if neg || strings.HasPrefix(expText, "+") {
		expText = expText[1:]
	}
	if expText == "" || !isInteger(expText) {
		return "", notJSON, false
	}
	if len(strings.TrimLeft(expText, "0")) > 9 {
		return "", tooLong, true
	}
	exp, _ := strconv.Atoi(expText)
	if neg {
		exp = -exp
	}
	if exp > max || exp < -max {
		return "", tooLong, true
	}
	digits := intPart + frac
	switch point := len(intPart) + exp; { // where the decimal point goes in digits
	case point <= 0:
		out = "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		out = digits + strings.Repeat("0", point-len(digits))
	default:
		out = digits[:point] + "." + digits[point:]
	}
	intEnd := strings.IndexByte(out, '.')
	if intEnd < 0 {
		intEnd = len(out)
	}
	lead := 0
	for lead < intEnd-1 && out[lead] == '0' {
		lead++
	}
	out = out[lead:]
	if strings.HasPrefix(s, "-") {
		out = "-" + out
	}
	if len(out) > max {
		return "", tooLong, true
	}
	return out, "", false
}

// NewCompare builds the predicate of one criterion. operator is a name OperatorByName
// accepts, or "IS" / "IS NOT" with a null value (meaning IS NULL / IS NOT NULL). value is a
// decoded JSON value as LiteralOf takes it: null only for IS [NOT] NULL; a string for BEGINS,
// CONTAINS and LIKE; an array of one or more scalars for IN; an array of exactly two for
// BETWEEN; one non-null scalar for the rest.
func NewCompare(column, operator string, value any, lim Limits) (*Compare, error) {
	lim = lim.withDefaults()
	c, msg, tooLarge := newCompare(column, operator, value, lim)
	if msg != "" {
		return nil, invalid("criterion", msg, tooLarge)
	}
	return c, nil
}

func newCompare(column, operator string, value any, lim Limits) (*Compare, string, bool) {
	if msg, tooLarge := identMsg("column", column, lim); msg != "" {
		return nil, msg, tooLarge
	}
	op, ok := OperatorByName(operator)
	switch {
	case equalFold(operator, "IS"):
		op, ok = OpIsNull, true
	case equalFold(operator, "IS NOT"):
		op, ok = OpIsNotNull, true
	}
	if !ok {
		return nil, "unknown operator " + quote(operator), false
	}
	c := &Compare{Column: column, Op: op}
	switch op {
	case OpIsNull, OpIsNotNull:
		if value != nil {
			return nil, op.String() + " takes no value (null)", false
		}
		return c, "", false
	case OpIn, OpBetween:
		list, isList := value.([]any)
		switch {
		case !isList && op == OpIn:
			return nil, "IN needs an array of values", false
		case !isList || op == OpBetween && len(list) != 2:
			return nil, "BETWEEN needs an array of two values", false
		case len(list) == 0:
			return nil, "IN needs at least one value", false
		case len(list) > lim.MaxInList:
			return nil, fmt.Sprintf("IN list longer than %d values", lim.MaxInList), true
		}
		for _, v := range list {
			l, msg, tooLarge := scalarOf(op, v, lim)
			if msg != "" {
				return nil, msg, tooLarge
			}
			c.Values = append(c.Values, l)
		}
		return c, "", false
	}
	l, msg, tooLarge := scalarOf(op, value, lim)
	if msg != "" {
		return nil, msg, tooLarge
	}
	c.Values = []Literal{l}
	return c, "", false
}

func scalarOf(op Op, v any, lim Limits) (Literal, string, bool) {
	l, msg, tooLarge := literalOf(v, lim)
	switch {
	case msg != "":
		return Literal{}, msg, tooLarge
	case l.Kind == KindNull:
		return Literal{}, op.String() + " cannot compare with null: use IS NULL or IS NOT NULL", false
	case op.Pattern() && l.Kind != KindString:
		return Literal{}, fmt.Sprintf("%s needs a string, found %s", op, l.Kind), false
	}
	return l, "", false
}

func identMsg(what, name string, lim Limits) (string, bool) {
	if len(name) > lim.MaxIdentBytes {
		return fmt.Sprintf("%s name longer than %d bytes", what, lim.MaxIdentBytes), true
	}
	return checkIdent(what, name), false
}

// CriteriaExpr builds a structured select's condition: every criterion ANDed, in order;
// nil when there are none. An error names the criterion by its index, "criteria[2]".
func CriteriaExpr(criteria []Criterion, lim Limits) (Expr, error) {
	lim = lim.withDefaults()
	if len(criteria) > lim.MaxPredicates {
		return nil, invalid("criteria", fmt.Sprintf("more than %d criteria", lim.MaxPredicates), true)
	}
	terms := make([]Expr, 0, len(criteria))
	values, grown := 0, 0
	for i, cr := range criteria {
		c, msg, tooLarge := newCompare(cr.ColumnName, cr.Operator, cr.Value, lim)
		if msg != "" {
			return nil, invalid(fmt.Sprintf("criteria[%d]", i), msg, tooLarge)
		}
		if values += len(c.Values); values > lim.MaxValues {
			return nil, invalid("criteria", fmt.Sprintf("more than %d values", lim.MaxValues), true)
		}
		if list, ok := cr.Value.([]any); ok {
			for j, v := range list {
				grown += grownBy(v, c.Values[j])
			}
		} else if len(c.Values) == 1 {
			grown += grownBy(cr.Value, c.Values[0])
		}
		if grown > lim.MaxBytes {
			return nil, tooLongWrittenOut(lim)
		}
		terms = append(terms, c)
	}
	return AndOf(terms...), nil
}

// tooLongWrittenOut refuses a structured statement whose numbers, written
// out, are longer than in its JSON by more than a statement may be long
// (MaxBytes): a JSON number's exponent is written out in full ("1e4095":
// 4,096 digits), so a small body could otherwise make a statement hundreds
// of times its size, for the upstream or as bind arguments. Values that
// grow nothing (strings, most numbers) are bounded by the body's size.
func tooLongWrittenOut(lim Limits) error {
	return invalid("values", fmt.Sprintf("numbers that written out are %d bytes longer than in the JSON, in all", lim.MaxBytes), true)
}

// grownBy is how much longer l, the literal of the decoded JSON value v,
// is than v's shortest JSON text: a number's written out exponent (a
// float64 from a decoder without UseNumber: its shortest text, 1e+308, as
// JSON's); 0 for anything else.
func grownBy(v any, l Literal) int {
	switch n := v.(type) {
	case json.Number:
		return max(0, len(l.Text)-len(n))
	case float64:
		return max(0, len(l.Text)-len(strconv.FormatFloat(n, 'g', -1, 64)))
	}
	return 0
}

// AndOf combines conditions with AND, skipping nil ones: nil for none, the condition itself
// for one, an *And otherwise. It does not flatten: an *And among terms stays one term.
func AndOf(terms ...Expr) Expr {
	var kept []Expr
	for _, t := range terms {
		if t != nil {
			kept = append(kept, t)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &And{Terms: kept}
}

// NewSelect builds a structured select of columns (none: every column) from table, with the
// condition where (nil: every row), for example from CriteriaExpr.
func NewSelect(table string, columns []string, where Expr, lim Limits) (*Select, error) {
	lim = lim.withDefaults()
	if msg, tooLarge := identMsg("table", table, lim); msg != "" {
		return nil, invalid("table", msg, tooLarge)
	}
	if msg, tooLarge := namesMsg(columns, lim); msg != "" {
		return nil, invalid("columns", msg, tooLarge)
	}
	s := &Select{Table: table, Where: where}
	if len(columns) > 0 {
		s.Columns = columns
	}
	if err := Check(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewInsert builds a structured insert of one row into table: columns[i] gets values[i],
// a decoded JSON value as LiteralOf takes it (null included). A handler that decodes the
// body object keeps its member order, or sorts the names, so that the SQL is deterministic.
func NewInsert(table string, columns []string, values []any, lim Limits) (*Insert, error) {
	return NewInsertRows(table, columns, [][]any{values}, lim)
}

// NewInsertRows builds a structured insert of several rows, each as NewInsert takes one;
// the bounds on values (MaxValues, and MaxBytes of growth from numbers written out) are
// the whole statement's.
func NewInsertRows(table string, columns []string, rows [][]any, lim Limits) (*Insert, error) {
	lim = lim.withDefaults()
	if msg, tooLarge := identMsg("table", table, lim); msg != "" {
		return nil, invalid("table", msg, tooLarge)
	}
	if len(columns) == 0 {
		return nil, invalid("row", "no columns", false)
	}
	if msg, tooLarge := namesMsg(columns, lim); msg != "" {
		return nil, invalid("row", msg, tooLarge)
	}
	ins := &Insert{Table: table, Columns: columns, Rows: make([][]Literal, 0, len(rows))}
	values, grown := 0, 0
	for r, vals := range rows {
		where := "row"
		if len(rows) > 1 {
			where = fmt.Sprintf("row %d", r)
		}
		if len(vals) != len(columns) {
			return nil, invalid(where, fmt.Sprintf("%d values for %d columns", len(vals), len(columns)), false)
		}
		if values += len(vals); values > lim.MaxValues {
			return nil, invalid(where, fmt.Sprintf("more than %d values", lim.MaxValues), true)
		}
		row := make([]Literal, len(vals))
		for i, v := range vals {
			l, msg, tooLarge := literalOf(v, lim)
			if msg != "" {
				return nil, invalid(where+": value of column "+quote(columns[i]), msg, tooLarge)
			}
			if grown += grownBy(v, l); grown > lim.MaxBytes {
				return nil, tooLongWrittenOut(lim)
			}
			row[i] = l
		}
		ins.Rows = append(ins.Rows, row)
	}
	return ins, nil
}

// namesMsg checks a list of column names against the bounds and the identifier rules.
func namesMsg(names []string, lim Limits) (string, bool) {
	if len(names) > lim.MaxColumns {
		return fmt.Sprintf("more than %d columns", lim.MaxColumns), true
	}
	for _, n := range names {
		if msg, tooLarge := identMsg("column", n, lim); msg != "" {
			return msg, tooLarge
		}
	}
	return checkNames(names), false
}
