package iql

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrTooLarge is wrapped by the errors of statements and structured requests that exceed a
// Limits bound, so a handler can tell them apart with errors.Is (for example to answer 413).
var ErrTooLarge = errors.New("iql: statement exceeds a limit")

// SyntaxError is a statement that Parse refuses, with where it went wrong.
type SyntaxError struct {
	Pos    int    // byte offset in the statement
	Line   int    // 1-based line
	Column int    // 1-based column, counted in characters (runes) from the line's start
	Msg    string // what was wrong; never holds more than a short piece of the input
	Err    error  // ErrTooLarge for a bound exceeded, else nil
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap returns Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

// newSyntaxError locates pos in src.
func newSyntaxError(src string, pos int, err error, format string, args ...any) *SyntaxError {
	if pos > len(src) {
		pos = len(src)
	}
	line, col := 1, 1
	for i := 0; i < pos; {
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return &SyntaxError{Pos: pos, Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Err: err}
}

// maxQuoted is how many bytes of the input an error message may quote.
const maxQuoted = 32

// quote returns s as a Go-quoted string for a message, cut to maxQuoted bytes at a rune
// boundary, so that an error never echoes a huge or unprintable input back.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// InvalidError is a structured request (criteria, an insert row) or a hand-built AST that
// does not form a valid statement.
type InvalidError struct {
	Where string // what was invalid: "criterion 2", "column \"Price\"", "statement"
	Msg   string
	Err   error // ErrTooLarge for a bound exceeded, else nil
}

func (e *InvalidError) Error() string { return "invalid " + e.Where + ": " + e.Msg }

// Unwrap returns Err.
func (e *InvalidError) Unwrap() error { return e.Err }
