package iql

import (
	"strconv"
	"unicode/utf8"
)

// Parse reads one IQL statement within the bounds lim (zero fields take the defaults). Its
// error is a *SyntaxError; one that exceeds a bound also wraps ErrTooLarge.
func Parse(src string, lim Limits) (Statement, error) {
	lim = lim.withDefaults()
	if len(src) > lim.MaxBytes {
		return nil, newSyntaxError(src[:lim.MaxBytes], lim.MaxBytes, ErrTooLarge, "statement longer than %d bytes", lim.MaxBytes)
	}
	if !utf8.ValidString(src) {
		pos := 0
		for {
			r, n := utf8.DecodeRuneInString(src[pos:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			pos += n
		}
		return nil, newSyntaxError(src, pos, nil, "the statement is not valid UTF-8")
	}
	p := &parser{lx: lexer{src: src, lim: lim}, lim: lim}
	return p.parse()
}

// parser is a recursive-descent parser with two tokens of lookahead. It stops at the first
// error by panicking with a bailout, which Parse recovers; no other panic is recovered.
type parser struct {
	lx       lexer
	lim      Limits
	tok      token // the current token
	ahead    token // the token after it, when hasAhead
	hasAhead bool

	depth      int // open parentheses and NOTs
	predicates int
	values     int
}

type bailout struct{ err *SyntaxError }

func (p *parser) parse() (stmt Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			stmt, err = nil, b.err
		}
	}()
	p.advance()
	switch {
	case p.isKw("SELECT"):
		stmt = p.selectStmt()
	case p.isKw("INSERT"):
		stmt = p.insertStmt()
	case p.isKw("UPDATE"):
		stmt = p.updateStmt()
	case p.isKw("DELETE"):
		stmt = p.deleteStmt()
	default:
		p.expected("SELECT, INSERT, UPDATE or DELETE")
	}
	return stmt, nil
}

func (p *parser) fail(pos int, tooLarge bool, format string, args ...any) {
	panic(bailout{p.lx.errorf(pos, tooLarge, format, args...)})
}

// expected fails at the current token: "expected <what>, found <token>".
func (p *parser) expected(what string) {
	p.fail(p.tok.pos, false, "expected %s, found %s", what, describe(p.lx.src, p.tok))
}

func (p *parser) lex() token {
	t, err := p.lx.next()
	if err != nil {
		panic(bailout{err.(*SyntaxError)})
	}
	return t
}

func (p *parser) advance() {
	if p.hasAhead {
		p.tok, p.hasAhead = p.ahead, false
		return
	}
	p.tok = p.lex()
}

func (p *parser) peek() token {
	if !p.hasAhead {
		p.ahead, p.hasAhead = p.lex(), true
	}
	return p.ahead
}

// isKw reports whether the current token is the keyword kw (upper-case).
func (p *parser) isKw(kw string) bool { return isKw(p.tok, kw) }

func isKw(t token, kw string) bool { return t.kind == tWord && equalFold(t.text, kw) }

func (p *parser) expectKw(kw string) {
	if !p.isKw(kw) {
		p.expected(kw)
	}
	p.advance()
}

func (p *parser) expect(k tokKind, what string) {
	if p.tok.kind != k {
		p.expected(what)
	}
	p.advance()
}

// ident reads a table or column name. Its length is checked here, not in the lexer,
// because keywords (CONTAINS) may be longer than a small MaxIdentBytes.
func (p *parser) ident(what string) string {
	if p.tok.kind != tWord {
		p.expected(what)
	}
	name := p.tok.text
	if len(name) > p.lim.MaxIdentBytes {
		p.fail(p.tok.pos, true, "identifier longer than %d bytes", p.lim.MaxIdentBytes)
	}
	p.advance()
	return name
}

// end accepts an optional ";" and then requires the end of the text. after lists what
// else could have followed, for the message.
func (p *parser) end(after string) {
	if p.tok.kind == tSemi {
		p.advance()
		if p.tok.kind != tEOF {
			p.fail(p.tok.pos, false, "only one statement is allowed: found %s after \";\"", describe(p.lx.src, p.tok))
		}
		return
	}
	if p.tok.kind != tEOF {
		p.expected(after + "end of statement")
	}
}

// names reads a comma-separated list of column names, refusing repeats and long lists.
func (p *parser) names(what string) []string {
	var cols []string
	for {
		pos := p.tok.pos
		name := p.ident(what)
		for _, c := range cols {
			if equalFold(c, name) {
				p.fail(pos, false, "column %s appears twice", quote(name))
			}
		}
		if len(cols) == p.lim.MaxColumns {
			p.fail(pos, true, "more than %d columns", p.lim.MaxColumns)
		}
		cols = append(cols, name)
		if p.tok.kind != tComma {
			return cols
		}
		p.advance()
	}
}

func (p *parser) selectStmt() *Select {
	p.advance()
	s := &Select{}
	if p.tok.kind == tStar {
		p.advance()
	} else {
		s.Columns = p.names("column name or *")
		if !p.isKw("FROM") {
			p.expected(`"," or FROM`)
		}
	}
	p.expectKw("FROM")
	s.Table = p.ident("table name")
	if p.isKw("WHERE") {
		p.advance()
		s.Where = p.expr()
	}
	if p.isKw("ORDER") {
		p.advance()
		p.expectKw("BY")
		s.OrderBy = p.orderBy()
	}
	if p.isKw("LIMIT") {
		p.advance()
		s.Limit = p.limit()
	}
	switch {
	case s.Limit != nil:
		p.end("")
	case s.OrderBy != nil:
		p.end(`",", ASC, DESC, LIMIT or `)
	case s.Where != nil:
		p.end("AND, OR, ORDER BY, LIMIT or ")
	default:
		p.end("WHERE, ORDER BY, LIMIT or ")
	}
	return s
}

func (p *parser) orderBy() []OrderTerm {
	var terms []OrderTerm
	for {
		if len(terms) == p.lim.MaxColumns {
			p.fail(p.tok.pos, true, "more than %d ORDER BY terms", p.lim.MaxColumns)
		}
		t := OrderTerm{Column: p.ident("column name")}
		if p.isKw("ASC") {
			p.advance()
		} else if p.isKw("DESC") {
			t.Desc = true
			p.advance()
		}
		terms = append(terms, t)
		if p.tok.kind != tComma {
			return terms
		}
		p.advance()
	}
}

func (p *parser) limit() *int64 {
	if p.tok.kind != tNumber || p.tok.text[0] == '-' || !isInteger(p.tok.text) {
		p.expected("a whole number of rows after LIMIT")
	}
	n, err := strconv.ParseInt(p.tok.text, 10, 64)
	if err != nil {
		p.fail(p.tok.pos, true, "LIMIT %s is too large", quote(p.tok.text))
	}
	p.advance()
	return &n
}

func isInteger(s string) bool { return digits(s) == len(s) }

func (p *parser) insertStmt() *Insert {
	p.advance()
	p.expectKw("INTO")
	s := &Insert{Table: p.ident("table name")}
	p.expect(tLParen, `"(" and the column names`)
	s.Columns = p.names("column name")
	p.expect(tRParen, `"," or ")"`)
	p.expectKw("VALUES")
	for {
		pos := p.tok.pos
		if len(s.Rows) == p.lim.MaxRows {
			p.fail(pos, true, "more than %d rows", p.lim.MaxRows)
		}
		p.expect(tLParen, `"(" and a row of values`)
		var row []Literal
		for {
			if len(row) == len(s.Columns) {
				p.fail(p.tok.pos, false, "row %d has more values than the %d columns", len(s.Rows)+1, len(s.Columns))
			}
			row = append(row, p.value(true))
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
		if len(row) < len(s.Columns) && p.tok.kind == tRParen {
			p.fail(p.tok.pos, false, "row %d has %d values for %d columns", len(s.Rows)+1, len(row), len(s.Columns))
		}
		p.expect(tRParen, `"," or ")"`)
		s.Rows = append(s.Rows, row)
		if p.tok.kind != tComma {
			break
		}
		p.advance()
	}
	p.end(`"," or `)
	return s
}

func (p *parser) updateStmt() *Update {
	p.advance()
	s := &Update{Table: p.ident("table name")}
	p.expectKw("SET")
	for {
		pos := p.tok.pos
		name := p.ident("column name")
		for _, a := range s.Set {
			if equalFold(a.Column, name) {
				p.fail(pos, false, "column %s appears twice", quote(name))
			}
		}
		if len(s.Set) == p.lim.MaxColumns {
			p.fail(pos, true, "more than %d columns", p.lim.MaxColumns)
		}
		p.expect(tEq, `"="`)
		s.Set = append(s.Set, Assignment{Column: name, Value: p.value(true)})
		if p.tok.kind != tComma {
			break
		}
		p.advance()
	}
	s.Where = p.requiredWhere("UPDATE", `"," or WHERE`)
	p.end("AND, OR or ")
	return s
}

func (p *parser) deleteStmt() *Delete {
	p.advance()
	p.expectKw("FROM")
	s := &Delete{Table: p.ident("table name")}
	s.Where = p.requiredWhere("DELETE", "WHERE")
	p.end("AND, OR or ")
	return s
}

// requiredWhere reads the WHERE clause that UPDATE and DELETE must have.
func (p *parser) requiredWhere(stmt, expected string) Expr {
	if p.tok.kind == tEOF || p.tok.kind == tSemi {
		p.fail(p.tok.pos, false, "%s needs a WHERE clause: changing every row of a table is not allowed", stmt)
	}
	if !p.isKw("WHERE") {
		p.expected(expected)
	}
	p.advance()
	return p.expr()
}
