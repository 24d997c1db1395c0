package iql

// expr reads OR-separated terms: expr = and { OR and }.
func (p *parser) expr() Expr {
	x := p.and()
	if !p.isKw("OR") {
		return x
	}
	terms := []Expr{x}
	for p.isKw("OR") {
		p.advance()
		terms = append(terms, p.and())
	}
	return &Or{Terms: terms}
}

// and reads AND-separated terms: and = not { AND not }.
func (p *parser) and() Expr {
	x := p.not()
	if !p.isKw("AND") {
		return x
	}
	terms := []Expr{x}
	for p.isKw("AND") {
		p.advance()
		terms = append(terms, p.not())
	}
	return &And{Terms: terms}
}

// not reads not = NOT not | "(" expr ")" | predicate. At a predicate's start the word NOT
// is the operator unless a comparison symbol follows it (then it is a column named Not).
func (p *parser) not() Expr {
	switch {
	case p.isKw("NOT"):
		if _, ok := compareOps[p.peek().kind]; ok {
			return p.predicate()
		}
		p.enter()
		p.advance()
		x := p.not()
		p.depth--
		return &Not{X: x}
	case p.tok.kind == tLParen:
		p.enter()
		p.advance()
		x := p.expr()
		p.expect(tRParen, `AND, OR or ")"`)
		p.depth--
		return x
	}
	return p.predicate()
}

// enter counts one more level of nesting at the current token.
func (p *parser) enter() {
	if p.depth == p.lim.MaxDepth {
		p.fail(p.tok.pos, true, "conditions nested deeper than %d levels", p.lim.MaxDepth)
	}
	p.depth++
}

// predicate reads column operator value(s).
func (p *parser) predicate() Expr {
	pos := p.tok.pos
	col := p.ident("column name, NOT or \"(\"")
	if p.predicates == p.lim.MaxPredicates {
		p.fail(pos, true, "more than %d predicates", p.lim.MaxPredicates)
	}
	p.predicates++
	c := &Compare{Column: col}
	if op, ok := compareOps[p.tok.kind]; ok {
		p.advance()
		c.Op = op
		c.Values = []Literal{p.scalar(op)}
		return c
	}
	if p.isKw("IS") {
		p.advance()
		c.Op = OpIsNull
		if p.isKw("NOT") {
			p.advance()
			c.Op = OpIsNotNull
		}
		p.expectKw("NULL")
		return c
	}
	negate := false
	if p.isKw("NOT") {
		if p.depth == p.lim.MaxDepth {
			p.fail(p.tok.pos, true, "conditions nested deeper than %d levels", p.lim.MaxDepth)
		}
		negate = true
		p.advance()
	}
	switch {
	case p.isKw("BEGINS"):
		c.Op = OpBegins
	case p.isKw("CONTAINS"):
		c.Op = OpContains
	case p.isKw("LIKE"):
		c.Op = OpLike
	case p.isKw("IN"):
		c.Op = OpIn
	case p.isKw("BETWEEN"):
		c.Op = OpBetween
	case negate:
		p.expected("LIKE, BEGINS, CONTAINS, IN or BETWEEN after NOT")
	default:
		p.expected("an operator (=, <>, <, <=, >, >=, IS, LIKE, BEGINS, CONTAINS, IN, BETWEEN) after column " + quote(col))
	}
	p.advance()
	switch c.Op {
	case OpIn:
		c.Values = p.list()
	case OpBetween:
		lo := p.scalar(OpBetween)
		p.expectKw("AND")
		c.Values = []Literal{lo, p.scalar(OpBetween)}
	default:
		c.Values = []Literal{p.scalar(c.Op)}
	}
	if negate {
		return &Not{X: c}
	}
	return c
}

// list reads IN's values in square brackets (as upstream writes them) or parentheses.
func (p *parser) list() []Literal {
	closing, what := tRBrack, `"]"`
	switch p.tok.kind {
	case tLBrack:
	case tLParen:
		closing, what = tRParen, `")"`
	default:
		p.expected(`"[" or "(" and a list of values after IN`)
	}
	p.advance()
	if p.tok.kind == closing {
		p.fail(p.tok.pos, false, "IN needs at least one value")
	}
	var vals []Literal
	for {
		if len(vals) == p.lim.MaxInList {
			p.fail(p.tok.pos, true, "IN list longer than %d values", p.lim.MaxInList)
		}
		vals = append(vals, p.scalar(OpIn))
		if p.tok.kind != tComma {
			break
		}
		p.advance()
	}
	p.expect(closing, `"," or `+what)
	return vals
}

// scalar reads a non-NULL value for op; the pattern operators need strings.
func (p *parser) scalar(op Op) Literal {
	pos := p.tok.pos
	if isKw(p.tok, "NULL") {
		p.fail(pos, false, "%s cannot compare with NULL: use IS NULL or IS NOT NULL", op)
	}
	v := p.value(false)
	if op.Pattern() && v.Kind != KindString {
		p.fail(pos, false, "%s needs a string, found %s", op, v.Kind)
	}
	return v
}

// value reads a literal; NULL only when null is true.
func (p *parser) value(null bool) Literal {
	if p.values == p.lim.MaxValues {
		p.fail(p.tok.pos, true, "more than %d values", p.lim.MaxValues)
	}
	var v Literal
	switch {
	case p.tok.kind == tString:
		v = StringLiteral(p.tok.text)
	case p.tok.kind == tNumber:
		v = Literal{Kind: KindNumber, Text: p.tok.text}
	case p.isKw("TRUE"):
		v = BoolLiteral(true)
	case p.isKw("FALSE"):
		v = BoolLiteral(false)
	case null && p.isKw("NULL"):
		v = NullLiteral()
	case null:
		p.expected("a value (a string, number, TRUE, FALSE or NULL)")
	default:
		p.expected("a value (a string, number, TRUE or FALSE)")
	}
	p.values++
	p.advance()
	return v
}
