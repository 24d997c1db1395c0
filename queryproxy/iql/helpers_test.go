package iql

// Helpers that keep the expected ASTs in the tables short.

func str(s string) Literal { return StringLiteral(s) }

func num(s string) Literal {
	l, err := NumberLiteral(s)
	if err != nil {
		panic(err)
	}
	return l
}

func cmp(col string, op Op, vals ...Literal) *Compare {
	return &Compare{Column: col, Op: op, Values: vals}
}

func and(terms ...Expr) *And { return &And{Terms: terms} }
func or(terms ...Expr) *Or   { return &Or{Terms: terms} }
func not(x Expr) *Not        { return &Not{X: x} }
func limit(n int64) *int64   { return &n }

func sel(table string, where Expr, cols ...string) *Select {
	return &Select{Table: table, Columns: cols, Where: where}
}
