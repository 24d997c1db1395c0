package sqlgen

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// FuzzGenerate generates SQL for every statement that parses, on both dialects, with and
// without an owner and a row limit, and checks that:
//
//	(a) no string or number value of the statement, nor the owner, (as written, quoted, or
//	    escaped for a pattern) of 3 bytes or more appears in the SQL, unless it also appears
//	    in the SQL of the same statement with every value replaced (then it is made of
//	    identifiers, keywords and punctuation, such as the value "Security" or "= ?");
//	(a') the SQL does not depend on the values at all: replacing every value by another of
//	    the same kind gives the same SQL;
//	(b) the SQL is made only of quoted catalog names (of the statement's table), keywords
//	    sqlgen writes, placeholders, punctuation and the ESCAPE '\' string, so no string
//	    literal, number or other word can be in it;
//	(c) the placeholders are as many as the arguments (on PostgreSQL, $1, $2, ... in order);
//	(d) the arguments are only strings, int64, float64, bool and nil;
//	(e) Generate fails only with *UnknownError or *StatementError.
func FuzzGenerate(f *testing.F) {
	for _, s := range []string{
		"select * from security",
		"SELECT code, PRICE FROM SECURITY WHERE code = 'BHP' and Price >= 37.480 order by Code desc limit 10",
		`select Code from Security where Code = 'Security' or Code = '= ?' or Name = '"Code"' or Name = 'SELECT'`,
		`select Code from Security where Code like 'A*B%_?[]\*' or Code begins 'B*%' or Name contains '?\'`,
		"select Id from order where Code in ['abc', 'def'] and Qty between 1 and 9223372036854775808 and Price < -0.001",
		"select Id from Order where not (Side = 'buy' or Side = 'sell') and Active = true",
		"insert into Order (Id, Code, Qty, Price, Note) values (1, 'abc', 10, 37.5, null), (2, 'xyz', -1, 0.1, 'it''s')",
		"update Account set Name = 'evil''; --', Balance = 12.345 where Id = 123",
		"delete from News where Headline contains 'breaking' or Published < '2024-01-01'",
		"select * from Account where Owner = 'someone-else'",
		"select Code from Security where Price like '1*' or Nope = 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		stmt, err := iql.Parse(src, iql.Limits{})
		if err != nil {
			return
		}
		optsList := []Options{{}, {MaxRows: 50}}
		if tab, ok := testCatalog.Table(stmt.TableName()); ok {
			if _, ok := tab.Column("Owner"); ok {
				optsList = append(optsList, Options{Owner: &Owner{Column: "owner", Value: "owner-value-xyz"}, MaxRows: 50})
			}
		}
		for _, d := range []Dialect{SQLite, PostgreSQL} {
			for _, opts := range optsList {
				checkGenerated(t, d, stmt, opts)
			}
		}
	})
}

func checkGenerated(t *testing.T, d Dialect, stmt iql.Statement, opts Options) {
	st, err := Generate(d, testCatalog, stmt, opts)
	if err != nil {
		_, unknown := errors.AsType[*UnknownError](err)
		_, statement := errors.AsType[*StatementError](err)
		if !unknown && !statement {
			t.Fatalf("(e) %s: Generate(%s) failed with %T: %v", d, iql.Format(stmt), err, err)
		}
		return
	}
	other, opts2 := replaceValues(stmt), opts
	if opts.Owner != nil {
		opts2.Owner = &Owner{Column: opts.Owner.Column, Value: "o"}
	}
	st2, err := Generate(d, testCatalog, other, opts2)
	if err != nil {
		t.Fatalf("%s: the statement with other values fails: %v", d, err)
	}
	// (a)
	values := literalTexts(stmt)
	if opts.Owner != nil {
		values = append(values, opts.Owner.Value.(string))
	}
	for _, v := range values {
		for _, form := range []string{v, "'" + strings.ReplaceAll(v, "'", "''") + "'",
			globEscaper.Replace(v), likeEscaper.Replace(v)} {
			if len(form) >= 3 && strings.Contains(st.SQL, form) && !strings.Contains(st2.SQL, form) {
				t.Fatalf("(a) %s: value %q appears in the SQL as %q:\n%s", d, v, form, st.SQL)
			}
		}
	}
	// (a')
	if st.SQL != st2.SQL {
		t.Fatalf("(a') %s: the SQL depends on the values:\n%s\n%s", d, st.SQL, st2.SQL)
	}
	// (b), (c)
	tab, _ := testCatalog.Table(stmt.TableName())
	placeholders, msg := scanSQL(d, st.SQL, tab)
	if msg != "" {
		t.Fatalf("(b) %s: %s in\n%s", d, msg, st.SQL)
	}
	if placeholders != len(st.Args) {
		t.Fatalf("(c) %s: %d placeholders, %d arguments:\n%s", d, placeholders, len(st.Args), st.SQL)
	}
	// (d)
	for _, a := range st.Args {
		switch a.(type) {
		case string, int64, float64, bool, nil:
		default:
			t.Fatalf("(d) %s: argument %#v of type %T", d, a, a)
		}
	}
}

// sqlKeywords are the words sqlgen writes.
var sqlKeywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`SELECT FROM WHERE AND OR NOT IN IS NULL BETWEEN GLOB LIKE
		ESCAPE COLLATE BINARY ORDER BY ASC DESC NULLS FIRST LAST LIMIT INSERT INTO VALUES
		UPDATE SET DELETE numeric`) {
		sqlKeywords[w] = true
	}
}

// scanSQL reads generated SQL with a strict tokenizer and returns the number of
// placeholders, or a message naming the first token that sqlgen should never write.
func scanSQL(d Dialect, sql string, tab Table) (int, string) {
	n := 0
	prevWord := ""
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '"':
			var name strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(sql[j:], '"')
				if k < 0 {
					return n, "unterminated quoted identifier"
				}
				name.WriteString(sql[j : j+k])
				j += k + 1
				if j < len(sql) && sql[j] == '"' {
					name.WriteByte('"')
					j++
					continue
				}
				break
			}
			id := name.String()
			_, isCol := tab.Column(id)
			switch {
			case prevWord == "COLLATE" && id == "C" && d == PostgreSQL:
			case id == tab.Name:
			case isCol && columnSpelling(tab, id):
			default:
				return n, "quoted identifier " + strconv.Quote(id) + " is not a catalog name of " + tab.Name
			}
			prevWord = ""
			i = j
		case c == '\'':
			if !strings.HasPrefix(sql[i:], `'\'`) || prevWord != "ESCAPE" || d != PostgreSQL {
				return n, "string literal at byte " + strconv.Itoa(i)
			}
			i += 3
		case c == '?' && d == SQLite:
			n++
			i++
		case c == '$' && d == PostgreSQL:
			j := i + 1
			for j < len(sql) && '0' <= sql[j] && sql[j] <= '9' {
				j++
			}
			if num, err := strconv.Atoi(sql[i+1 : j]); err != nil || num != n+1 {
				return n, "placeholder " + sql[i:j] + " out of order"
			}
			n++
			i = j
		case 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
			j := i
			for j < len(sql) && ('A' <= sql[j] && sql[j] <= 'Z' || 'a' <= sql[j] && sql[j] <= 'z') {
				j++
			}
			w := sql[i:j]
			if !sqlKeywords[w] || w == "numeric" && !strings.HasSuffix(sql[:i], "::") {
				return n, "word " + strconv.Quote(w)
			}
			prevWord = w
			i = j
		case strings.IndexByte(" ,()=<>:", c) >= 0:
			i++
		default:
			return n, "character " + strconv.QuoteRune(rune(c)) + " at byte " + strconv.Itoa(i)
		}
	}
	return n, ""
}

// columnSpelling reports whether id is a column's exact catalog spelling.
func columnSpelling(tab Table, id string) bool {
	for _, c := range tab.Columns {
		if c.Name == id {
			return true
		}
	}
	return false
}

// literalTexts lists the text of every string and number literal of stmt.
func literalTexts(stmt iql.Statement) []string {
	var out []string
	replaceLiterals(stmt, func(l iql.Literal) iql.Literal {
		if l.Kind == iql.KindString || l.Kind == iql.KindNumber {
			out = append(out, l.Text)
		}
		return l
	})
	return out
}

// replaceValues returns a copy of stmt with every value replaced by another of the same
// kind that generates the same SQL if values never reach it: strings by "" (or "x"),
// integers that fit int64 by 1 (or 2), other numbers by 0.5 (or 0.25), booleans flipped.
// The replacements are too short to contain a value that (a) checks.
func replaceValues(stmt iql.Statement) iql.Statement {
	return replaceLiterals(stmt, func(l iql.Literal) iql.Literal {
		switch l.Kind {
		case iql.KindString:
			if l.Text == "" {
				return iql.StringLiteral("x")
			}
			return iql.StringLiteral("")
		case iql.KindNumber:
			alt := "0.5"
			if _, err := strconv.ParseInt(l.Text, 10, 64); err == nil {
				alt = "1"
			}
			if alt == l.Text {
				alt = map[string]string{"1": "2", "0.5": "0.25"}[alt]
			}
			n, _ := iql.NumberLiteral(alt)
			return n
		case iql.KindBool:
			return iql.BoolLiteral(!l.Bool)
		}
		return l
	})
}

// replaceLiterals returns a copy of stmt with f applied to every literal, in order.
func replaceLiterals(stmt iql.Statement, f func(iql.Literal) iql.Literal) iql.Statement {
	var expr func(e iql.Expr) iql.Expr
	expr = func(e iql.Expr) iql.Expr {
		switch x := e.(type) {
		case *iql.And:
			terms := make([]iql.Expr, len(x.Terms))
			for i, t := range x.Terms {
				terms[i] = expr(t)
			}
			return &iql.And{Terms: terms}
		case *iql.Or:
			terms := make([]iql.Expr, len(x.Terms))
			for i, t := range x.Terms {
				terms[i] = expr(t)
			}
			return &iql.Or{Terms: terms}
		case *iql.Not:
			return &iql.Not{X: expr(x.X)}
		case *iql.Compare:
			c := *x
			c.Values = make([]iql.Literal, len(x.Values))
			for i, v := range x.Values {
				c.Values[i] = f(v)
			}
			return &c
		}
		return e
	}
	switch s := stmt.(type) {
	case *iql.Select:
		c := *s
		if s.Where != nil {
			c.Where = expr(s.Where)
		}
		return &c
	case *iql.Insert:
		c := *s
		c.Rows = make([][]iql.Literal, len(s.Rows))
		for i, row := range s.Rows {
			c.Rows[i] = make([]iql.Literal, len(row))
			for j, v := range row {
				c.Rows[i][j] = f(v)
			}
		}
		return &c
	case *iql.Update:
		c := *s
		c.Set = make([]iql.Assignment, len(s.Set))
		for i, a := range s.Set {
			c.Set[i] = iql.Assignment{Column: a.Column, Value: f(a.Value)}
		}
		c.Where = expr(s.Where)
		return &c
	case *iql.Delete:
		c := *s
		c.Where = expr(s.Where)
		return &c
	}
	return stmt
}
