package iql

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a Literal.
type Kind uint8

// The literal kinds. The zero Kind is invalid, so a zero Literal is never mistaken for a
// value.
const (
	KindString Kind = iota + 1
	KindNumber
	KindBool
	KindNull
)

// String names the kind for messages: "string", "number", "boolean", "NULL".
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindBool:
		return "boolean"
	case KindNull:
		return "NULL"
	}
	return "invalid literal"
}

// Literal is a value written in a statement. Build one with StringLiteral, NumberLiteral,
// BoolLiteral, NullLiteral or LiteralOf (from a decoded JSON value).
type Literal struct {
	Kind Kind
	// Text is a string's value (quotes removed, doubled quotes undone) or a number's exact
	// text ("-37.480"); it is empty for booleans and NULL.
	Text string
	// Bool is a boolean's value; false for the other kinds.
	Bool bool
}

// StringLiteral returns a string literal. Check refuses a string that is not valid UTF-8 or
// holds NUL.
func StringLiteral(s string) Literal { return Literal{Kind: KindString, Text: s} }

// NumberLiteral returns a number literal with exactly this text, which must follow the IQL
// number syntax: an optional "-", digits, and optionally "." and digits. LiteralOf accepts
// JSON numbers with exponents and writes them out in this syntax.
func NumberLiteral(text string) (Literal, error) {
	if !validNumber(text) {
		return Literal{}, errors.New("a number is an optional -, digits, and optionally . and digits")
	}
	return Literal{Kind: KindNumber, Text: text}, nil
}

// BoolLiteral returns TRUE or FALSE.
func BoolLiteral(b bool) Literal { return Literal{Kind: KindBool, Bool: b} }

// NullLiteral returns NULL, which is only a value in INSERT rows and UPDATE's SET.
func NullLiteral() Literal { return Literal{Kind: KindNull} }

// check reports what makes l an invalid literal, or nil.
func (l Literal) check() error {
	switch l.Kind {
	case KindString:
		if !utf8.ValidString(l.Text) {
			return errors.New("a string must be valid UTF-8")
		}
		if strings.IndexByte(l.Text, 0) >= 0 {
			return errors.New("a string must not contain NUL")
		}
		if l.Bool {
			return errors.New("a string literal has Bool set")
		}
	case KindNumber:
		if !validNumber(l.Text) {
			return errors.New("a number is an optional -, digits, and optionally . and digits")
		}
		if l.Bool {
			return errors.New("a number literal has Bool set")
		}
	case KindBool, KindNull:
		if l.Text != "" {
			return errors.New("a boolean or NULL literal has Text set")
		}
		if l.Kind == KindNull && l.Bool {
			return errors.New("a NULL literal has Bool set")
		}
	default:
		return errors.New("invalid literal kind")
	}
	return nil
}

// validNumber reports whether s is -?[0-9]+(\.[0-9]+)?.
func validNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	i := digits(s)
	if i == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	j := digits(s[i+1:])
	return j > 0 && i+1+j == len(s)
}

// digits returns how many ASCII digits s starts with.
func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= lower(c) && lower(c) <= 'z' || c == '_' }

// ValidIdent reports whether s is an IQL identifier: an ASCII letter or "_" followed by
// ASCII letters, digits and "_". It says nothing about length; Limits.MaxIdentBytes does.
func ValidIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
