package iql

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tNumber
	tString
	tStar
	tComma
	tLParen
	tRParen
	tLBrack
	tRBrack
	tSemi
	tEq
	tNe
	tLt
	tLe
	tGt
	tGe
)

// token is one lexical token. For words, numbers and symbols text is the source text; for
// strings it is the decoded value. src[pos:end] is always the source text.
type token struct {
	kind     tokKind
	pos, end int
	text     string
}

// compareOps maps the comparison symbols to their operators.
var compareOps = map[tokKind]Op{tEq: OpEq, tNe: OpNe, tLt: OpLt, tLe: OpLe, tGt: OpGt, tGe: OpGe}

// lexer splits a statement into tokens on demand.
type lexer struct {
	src string
	pos int
	lim Limits
}

func (l *lexer) errorf(pos int, tooLarge bool, format string, args ...any) *SyntaxError {
	var err error
	if tooLarge {
		err = ErrTooLarge
	}
	return newSyntaxError(l.src, pos, err, format, args...)
}

// next returns the next token, tEOF at the end.
func (l *lexer) next() (token, error) {
	src := l.src
	for l.pos < len(src) {
		c := src[l.pos]
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		l.pos++
	}
	start := l.pos
	if start >= len(src) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := src[start]
	switch {
	case isLetter(c):
		return l.word()
	case isDigit(c) || c == '-' && start+1 < len(src) && isDigit(src[start+1]):
		return l.number()
	case c == '\'' || c == '"':
		return l.str()
	case c == '-' && strings.HasPrefix(src[start:], "--"), c == '/' && strings.HasPrefix(src[start:], "/*"):
		return token{}, l.errorf(start, false, "comments are not supported")
	}
	kind, n := tEOF, 1
	switch c {
	case '*':
		kind = tStar
	case ',':
		kind = tComma
	case '(':
		kind = tLParen
	case ')':
		kind = tRParen
	case '[':
		kind = tLBrack
	case ']':
		kind = tRBrack
	case ';':
		kind = tSemi
	case '=':
		kind = tEq
	case '<':
		kind = tLt
		if strings.HasPrefix(src[start:], "<=") {
			kind, n = tLe, 2
		} else if strings.HasPrefix(src[start:], "<>") {
			kind, n = tNe, 2
		}
	case '>':
		kind = tGt
		if strings.HasPrefix(src[start:], ">=") {
			kind, n = tGe, 2
		}
	case '!':
		if strings.HasPrefix(src[start:], "!=") {
			kind, n = tNe, 2
		}
	}
	if kind == tEOF {
		return token{}, l.unexpected(start)
	}
	l.pos += n
	return token{kind: kind, pos: start, end: l.pos, text: src[start:l.pos]}, nil
}

// unexpected describes the character at pos, which starts no token.
func (l *lexer) unexpected(pos int) error {
	r, _ := utf8.DecodeRuneInString(l.src[pos:])
	switch {
	case r >= utf8.RuneSelf && unicode.In(r, unicode.L, unicode.M, unicode.N):
		return l.errorf(pos, false, "identifiers are ASCII only: found %q (U+%04X)", r, r)
	case r == '-':
		return l.errorf(pos, false, `unexpected "-": a minus sign must be followed by digits`)
	case r == '.':
		return l.errorf(pos, false, `unexpected ".": a number must start with a digit`)
	}
	return l.errorf(pos, false, "unexpected character %q (U+%04X)", r, r)
}

// word reads an identifier or keyword.
func (l *lexer) word() (token, error) {
	start := l.pos
	for l.pos < len(l.src) && (isLetter(l.src[l.pos]) || isDigit(l.src[l.pos])) {
		l.pos++
	}
	if l.pos < len(l.src) && l.src[l.pos] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeRuneInString(l.src[l.pos:]); unicode.In(r, unicode.L, unicode.M, unicode.N) {
			return token{}, l.errorf(l.pos, false, "identifiers are ASCII only: found %q (U+%04X)", r, r)
		}
	}
	return token{kind: tWord, pos: start, end: l.pos, text: l.src[start:l.pos]}, nil
}

// number reads -?[0-9]+(\.[0-9]+)? and refuses letters, dots or digits glued to it.
func (l *lexer) number() (token, error) {
	start := l.pos
	if l.src[l.pos] == '-' {
		l.pos++
	}
	l.pos += digits(l.src[l.pos:])
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		n := digits(l.src[l.pos:])
		if n == 0 {
			return token{}, l.errorf(start, false, "invalid number %s: a decimal point must be followed by digits", quote(l.src[start:l.pos]))
		}
		l.pos += n
	}
	if l.pos < len(l.src) {
		if c := l.src[l.pos]; isLetter(c) || c == '.' || c >= utf8.RuneSelf {
			return token{}, l.errorf(start, false, "invalid number: %s must be followed by a space or a symbol", quote(l.src[start:l.pos]))
		}
	}
	if l.pos-start > l.lim.MaxLiteral {
		return token{}, l.errorf(start, true, "number longer than %d bytes", l.lim.MaxLiteral)
	}
	return token{kind: tNumber, pos: start, end: l.pos, text: l.src[start:l.pos]}, nil
}

// str reads a string in single or double quotes, the quote doubled inside.
func (l *lexer) str() (token, error) {
	start := l.pos
	q := l.src[start]
	var b strings.Builder
	plain := true // no doubled quote so far: the value is a slice of src
	i := start + 1
	for {
		j := strings.IndexByte(l.src[i:], q)
		if j < 0 {
			return token{}, l.errorf(start, false, "unterminated string")
		}
		j += i
		if j+1 < len(l.src) && l.src[j+1] == q {
			plain = false
			b.WriteString(l.src[i : j+1])
			i = j + 2
			continue
		}
		var text string
		if plain {
			text = l.src[start+1 : j]
		} else {
			b.WriteString(l.src[i:j])
			text = b.String()
		}
		l.pos = j + 1
		if len(text) > l.lim.MaxLiteral {
			return token{}, l.errorf(start, true, "string longer than %d bytes", l.lim.MaxLiteral)
		}
		if k := strings.IndexByte(text, 0); k >= 0 {
			return token{}, l.errorf(start, false, "a string must not contain NUL")
		}
		return token{kind: tString, pos: start, end: l.pos, text: text}, nil
	}
}

// describe names a token for "found ..." in a message, quoting at most a short piece.
func describe(src string, t token) string {
	switch t.kind {
	case tEOF:
		return "end of statement"
	case tString:
		return "string " + quote(src[t.pos:t.end])
	case tNumber:
		return "number " + quote(t.text)
	}
	return quote(t.text)
}
