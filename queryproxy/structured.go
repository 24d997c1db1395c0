package queryproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// parseSelect builds a select from the URL's columns (?columns=a,b or
// ?column=a&column=b, the names in any case; none: all) and the criteria
// body [{"ColumnName","Operator","Value"}], combined with AND.
func (h *Handler) parseSelect(rawQuery, table string, body []byte) (iql.Statement, *Error) {
	// The parameters in the order they come (url.Values, a map, would lose it): the
	// columns are the result's, in this order. Malformed as url.ParseQuery has it: a
	// semicolon, a bad escape.
	var cols []string
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || strings.Contains(pair, ";") {
			return nil, errInvalid("the query string is malformed")
		}
		switch {
		case sqlgen.EqualFold(name, "columns"):
			for c := range strings.SplitSeq(value, ",") {
				cols = append(cols, strings.TrimSpace(c))
			}
		case sqlgen.EqualFold(name, "column"):
			cols = append(cols, value)
		default:
			return nil, errInvalid(fmt.Sprintf("unknown parameter %q (columns, column)", truncate(name, 64)))
		}
	}
	var err error
	var criteria []iql.Criterion
	if len(bytes.TrimSpace(body)) > 0 {
		if criteria, err = decodeCriteria(body); err != nil {
			return nil, errInvalid("criteria: " + err.Error())
		}
	}
	where, err := iql.CriteriaExpr(criteria, h.cfg.Limits)
	if err != nil {
		return nil, parseError(err)
	}
	stmt, err := iql.NewSelect(table, cols, where, h.cfg.Limits)
	if err != nil {
		return nil, parseError(err)
	}
	return stmt, nil
}

// decodeCriteria reads [{"ColumnName","Operator","Value"}]: member names
// in any case (the upstream is ASP.NET), each once; numbers kept as their
// exact text.
func decodeCriteria(body []byte) ([]iql.Criterion, error) {
	d := getDecoder(body)
	defer putDecoder(d)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, errors.New("not a JSON array of {ColumnName, Operator, Value}")
	}
	var out []iql.Criterion
	for d.PeekKind() != ']' {
		if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
			return nil, fmt.Errorf("element %d is not an object", len(out))
		}
		var c iql.Criterion
		var seen [3]bool
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, errors.New("malformed JSON")
			}
			name := tok.String()
			v, err := d.ReadValue()
			if err != nil {
				return nil, errors.New("malformed JSON")
			}
			var i int
			switch {
			case sqlgen.EqualFold(name, "ColumnName"):
				i = 0
			case sqlgen.EqualFold(name, "Operator"):
				i = 1
			case sqlgen.EqualFold(name, "Value"):
				i = 2
			default:
				return nil, fmt.Errorf("element %d: unknown member %q", len(out), truncate(name, 64))
			}
			if seen[i] {
				return nil, fmt.Errorf("element %d: member %q twice", len(out), truncate(name, 64))
			}
			seen[i] = true
			switch i {
			case 0, 1:
				if v.Kind() != '"' {
					return nil, fmt.Errorf("element %d: %s must be a string", len(out), name)
				}
				s, err := unquote(v)
				if err != nil {
					return nil, fmt.Errorf("element %d: %s must be a string", len(out), name)
				}
				if i == 0 {
					c.ColumnName = s
				} else {
					c.Operator = s
				}
			case 2:
				if c.Value, err = jsonValue(v, true); err != nil {
					return nil, fmt.Errorf("element %d: Value: %w", len(out), err)
				}
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, errors.New("malformed JSON")
		}
		if !seen[0] || !seen[1] {
			return nil, fmt.Errorf("element %d needs ColumnName and Operator", len(out))
		}
		out = append(out, c)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, errors.New("malformed JSON")
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the array")
	}
	return out, nil
}

// jsonValue decodes a JSON value for a literal: a string, a number (as
// json.Number, its exact text), a boolean or null; with arrays, an array
// of those (IN, BETWEEN). Objects are refused.
func jsonValue(v jsontext.Value, arrays bool) (any, error) {
	switch v.Kind() {
	case '"':
		return unquote(v)
	case '0':
		return json.Number(v), nil
	case 't', 'f':
		return v.Kind() == 't', nil
	case 'n':
		return nil, nil
	case '[':
		if !arrays {
			return nil, errors.New("an array is not a value here")
		}
		d := jsontext.NewDecoder(bytes.NewReader(v))
		_, _ = d.ReadToken()
		var out []any
		for d.PeekKind() != ']' {
			e, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			x, err := jsonValue(e, false)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	return nil, errors.New("an object is not a value")
}

// unquote is the string a JSON string value holds (the decoder has
// validated it): its bytes between the quotes when it has no escape.
func unquote(v jsontext.Value) (string, error) {
	if len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

// decoder is a pooled JSON decoder over a byte slice, read in place (the
// decoder parses a *bytes.Buffer without copying it).
type decoder struct {
	*jsontext.Decoder
	buf bytes.Buffer
}

var decoders = sync.Pool{New: func() any {
	d := &decoder{}
	d.Decoder = jsontext.NewDecoder(&d.buf)
	return d
}}

// getDecoder is a decoder of body, from the pool; putDecoder gives it
// back, holding nothing of body.
func getDecoder(body []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.buf = *bytes.NewBuffer(body)
	d.Reset(&d.buf)
	return d
}

func putDecoder(d *decoder) {
	d.buf = bytes.Buffer{}
	d.Reset(&d.buf)
	decoders.Put(d)
}

// parseInsert builds inserts from a JSON object column -> value, or an
// array of such objects (one transaction). Column names are compared
// ignoring ASCII case; one named twice is refused, and so is a row of
// more than MaxColumns as soon as it has one more (the check for names
// named twice is quadratic, so it must run on a bounded row: a 1 MiB
// object holds some 87,000 short names).
func (h *Handler) parseInsert(table string, body []byte) (iql.Statement, *Error) {
	d := jsontext.NewDecoder(bytes.NewReader(body))
	first := d.PeekKind()
	if first != '{' && first != '[' {
		return nil, errInvalid("the body must be a JSON object (column -> value) or an array of them")
	}
	maxCols := h.cfg.Limits.MaxColumns
	if maxCols <= 0 {
		maxCols = iql.DefaultMaxColumns
	}
	var rows []map[string]any
	var order [][]string
	readObject := func() *Error {
		if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
			return errInvalid(fmt.Sprintf("row %d is not a JSON object", len(rows)))
		}
		row := map[string]any{}
		var names []string
		for d.PeekKind() != '}' {
			if len(names) == maxCols {
				return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge,
					Message: fmt.Sprintf("row %d: more than %d columns", len(rows), maxCols)}
			}
			tok, err := d.ReadToken()
			if err != nil {
				return errInvalid("malformed JSON")
			}
			name := tok.String()
			v, err := d.ReadValue()
			if err != nil {
				return errInvalid("malformed JSON")
			}
			for _, n := range names {
				if sqlgen.EqualFold(n, name) {
					return errInvalid(fmt.Sprintf("row %d: column %q twice", len(rows), truncate(name, 64)))
				}
			}
			x, err := jsonValue(v, false)
			if err != nil {
				return errInvalid(fmt.Sprintf("row %d: column %q: %v", len(rows), truncate(name, 64), err))
			}
			names = append(names, name)
			row[name] = x
		}
		if _, err := d.ReadToken(); err != nil {
			return errInvalid("malformed JSON")
		}
		rows, order = append(rows, row), append(order, names)
		return nil
	}
	maxRows := h.cfg.Limits.MaxRows
	if maxRows <= 0 {
		maxRows = iql.DefaultMaxRows
	}
	if first == '{' {
		if e := readObject(); e != nil {
			return nil, e
		}
	} else {
		_, _ = d.ReadToken()
		for d.PeekKind() != ']' {
			if len(rows) == maxRows {
				return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("at most %d rows per insert", maxRows)}
			}
			if e := readObject(); e != nil {
				return nil, e
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, errInvalid("malformed JSON")
		}
		if len(rows) == 0 {
			return nil, errInvalid("no row to insert")
		}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, errInvalid("data after the JSON value")
	}
	// One INSERT of several rows when every row names the same columns in
	// the same order; else the first row's columns decide, and a row
	// naming others is refused (one statement, one column list).
	cols := order[0]
	all := make([][]any, 0, len(order))
	for i, names := range order {
		if len(names) != len(cols) {
			return nil, errInvalid(fmt.Sprintf("row %d names other columns than row 0", i))
		}
		vals := make([]any, len(cols))
		for j, c := range cols {
			v, ok := lookupFold(rows[i], c)
			if !ok {
				return nil, errInvalid(fmt.Sprintf("row %d names other columns than row 0", i))
			}
			vals[j] = v
		}
		all = append(all, vals)
	}
	ins, err := iql.NewInsertRows(table, cols, all, h.cfg.Limits)
	if err != nil {
		return nil, parseError(err)
	}
	if err := iql.Check(ins); err != nil {
		return nil, parseError(err)
	}
	return ins, nil
}

func lookupFold(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if sqlgen.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}
