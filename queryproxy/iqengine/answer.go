package iqengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// answer is a select's answer, read as it arrives (engine.Rows): one
// JSON object with these two members, each once, spelled so, in either
// order (the upstream sends Rows first):
//
//   - "Rows": an array of rows, each an array of one plain value (string,
//     number, true, false, null) per asked column;
//   - "Columns": an object naming exactly the asked columns, each an object
//     whose "Index" is the column's place in the select list (its other
//     members are skipped: the upstream's types are not passed on, the
//     catalog's are).
//
// Other members are the upstream's own, skipped; one that is Rows or
// Columns but for case is ambiguous, and refused. Nothing may follow the
// object. Anything else fails with ErrBadGateway, at
// the point where it is read: WriteResult then answers 502 if it has sent
// nothing, else cuts the result short with the trailer. The answer's bytes
// are bounded by MaxAnswerBytes (limitedBody), its rows by the handler's
// MaxRows (WriteResult stops reading at one more).
type answer struct {
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	dec    jsontext.Decoder
	cols   []sqlgen.Column
	vals   []any
	rows   int  // rows read
	inRows bool // within the Rows array
	seen   [2]bool
	done   bool
	err    error
}

func (a *answer) Columns() []sqlgen.Column { return a.cols }
func (a *answer) Values() []any            { return a.vals }
func (a *answer) Err() error               { return a.err }

// Close ends the upstream request; safe to call more than once.
func (a *answer) Close() error {
	a.cancel()
	return a.body.Close()
}

// Next reads the answer up to the next row.
func (a *answer) Next() bool {
	for a.err == nil && !a.done {
		if a.inRows {
			tok, err := a.dec.ReadToken()
			switch {
			case err != nil:
				return a.fail(err, "Rows cut short")
			case tok.Kind() == ']':
				a.inRows = false
				continue
			case tok.Kind() != '[':
				return a.fail(nil, fmt.Sprintf("row %d is not an array", a.rows))
			}
			return a.row()
		}
		tok, err := a.dec.ReadToken()
		if err != nil {
			return a.fail(err, "the object cut short")
		}
		if tok.Kind() == '}' {
			if !a.seen[0] || !a.seen[1] {
				return a.fail(nil, "the answer lacks Rows or Columns")
			}
			if _, err := a.dec.ReadToken(); err != io.EOF {
				return a.fail(err, "data after the answer")
			}
			a.done = true
			return false
		}
		switch name := tok.String(); {
		case !strings.EqualFold(name, "Rows") && !strings.EqualFold(name, "Columns"):
			// A member of the upstream's own: its contents are
			// undocumented, and the result is rebuilt without it.
			if err := a.dec.SkipValue(); err != nil {
				return a.fail(err, "the object cut short")
			}
		case name == "Rows" && !a.seen[0]:
			a.seen[0] = true
			if tok, err := a.dec.ReadToken(); err != nil || tok.Kind() != '[' {
				return a.fail(err, "Rows is not an array")
			}
			a.inRows = true
		case name == "Columns" && !a.seen[1]:
			a.seen[1] = true
			if err := a.columns(); err != nil {
				a.err = err // columns' failure, made already
				return false
			}
		default:
			return a.fail(nil, fmt.Sprintf("%q: Rows and Columns must come once each, spelled so", name))
		}
	}
	return false
}

// row reads the values of a row, its '[' read, and its ']'.
func (a *answer) row() bool {
	for i := range a.vals {
		tok, err := a.dec.ReadToken()
		if err != nil {
			return a.fail(err, fmt.Sprintf("row %d cut short", a.rows))
		}
		switch tok.Kind() {
		case 'n':
			a.vals[i] = nil
		case 't', 'f':
			a.vals[i] = tok.Kind() == 't'
		case '"':
			a.vals[i] = tok.String()
		case '0':
			a.vals[i] = engine.Decimal(tok.String())
		default:
			return a.fail(nil, fmt.Sprintf("row %d holds fewer than %d plain values", a.rows, len(a.vals)))
		}
	}
	if tok, err := a.dec.ReadToken(); err != nil || tok.Kind() != ']' {
		return a.fail(err, fmt.Sprintf("row %d holds more than %d values", a.rows, len(a.vals)))
	}
	a.rows++
	return true
}

// columns reads Columns, its name read: exactly the asked columns, each
// once, at its place.
func (a *answer) columns() error {
	if tok, err := a.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return a.failure(err, "Columns is not an object")
	}
	seen := make([]bool, len(a.cols))
	for {
		tok, err := a.dec.ReadToken()
		if err != nil {
			return a.failure(err, "Columns cut short")
		}
		if tok.Kind() == '}' {
			break
		}
		name := tok.String()
		at := slices.IndexFunc(a.cols, func(c sqlgen.Column) bool { return c.Name == name })
		if at < 0 || seen[at] {
			return a.failure(nil, fmt.Sprintf("Columns names %q, which was not asked, or twice", name))
		}
		seen[at] = true
		if err := a.column(name, at); err != nil {
			return err
		}
	}
	if slices.Contains(seen, false) {
		return a.failure(nil, "Columns lacks an asked column")
	}
	return nil
}

// column reads the object of the asked column name, its name read: its
// Index, once, must be at; its other members, the upstream's own (its Type
// among them), are skipped.
func (a *answer) column(name string, at int) error {
	if tok, err := a.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return a.failure(err, fmt.Sprintf("column %q is not an object", name))
	}
	index := false
	for {
		tok, err := a.dec.ReadToken()
		switch {
		case err != nil:
			return a.failure(err, "Columns cut short")
		case tok.Kind() == '}':
			if !index {
				return a.failure(nil, fmt.Sprintf("column %q has no Index", name))
			}
			return nil
		case tok.String() != "Index":
			if err := a.dec.SkipValue(); err != nil {
				return a.failure(err, "Columns cut short")
			}
			continue
		}
		v, err := a.dec.ReadToken()
		if err != nil {
			return a.failure(err, "Columns cut short")
		}
		if index || v.Kind() != '0' || v.String() != strconv.Itoa(at) {
			return a.failure(nil, fmt.Sprintf("column %q is out of place", name))
		}
		index = true
	}
}

// fail ends the answer with failure's error; false, for Next.
func (a *answer) fail(err error, what string) bool {
	if a.err == nil {
		a.err = a.failure(err, what)
	}
	return false
}

// failure is the error of an answer that could not be read: err, the
// decoder's, when it is the connection's (the time limit, the caller gone,
// the connection lost) or the answer's size; ErrBadGateway otherwise, with
// what was wrong.
func (a *answer) failure(err error, what string) error {
	if err != nil {
		if errors.Is(err, errAnswerTooLarge) {
			return fmt.Errorf("iq: %w: %w", engine.ErrBadGateway, err)
		}
		if _, syntax := errors.AsType[*jsontext.SyntacticError](err); !syntax && err != io.EOF {
			return transportError(a.ctx, err)
		}
		if a.ctx.Err() != nil {
			return transportError(a.ctx, err)
		}
	}
	if what == "" {
		what = "malformed"
	}
	return fmt.Errorf("iq: the answer is not {\"Rows\", \"Columns\"} as asked (%s): %w", what, engine.ErrBadGateway)
}

// errAnswerTooLarge is limitedBody's error past its bound.
var errAnswerTooLarge = errors.New("the answer is larger than max_answer_size")

// limitedBody reads at most left bytes of r, then fails with
// errAnswerTooLarge (an io.LimitReader would end quietly, a cut answer).
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells an answer of exactly the bound from a larger one.
		var one [1]byte
		if n, _ := io.ReadFull(l.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
