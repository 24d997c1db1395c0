package sqlgen

import (
	"database/sql"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// matchIQL is the reference meaning of BEGINS, CONTAINS and LIKE (package doc, "Comparison
// rules"): case-sensitive, and in LIKE only "*" is special.
func matchIQL(op iql.Op, pattern, s string) bool {
	switch op {
	case iql.OpBegins:
		return strings.HasPrefix(s, pattern)
	case iql.OpContains:
		return strings.Contains(s, pattern)
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// patternDB is a database with one table, Security, holding one row whose Code a check sets.
type patternDB struct {
	db *sql.DB
	d  Dialect
}

func newPatternDB(t testing.TB, db *sql.DB, d Dialect) *patternDB {
	if _, err := db.Exec(`CREATE TABLE "Security" ("Id" INTEGER, "Code" TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO "Security" VALUES (1, '')`); err != nil {
		t.Fatal(err)
	}
	return &patternDB{db: db, d: d}
}

// matches runs the generated predicate "Code <op> pattern" against a row holding s.
func (p *patternDB) matches(t testing.TB, op iql.Op, pattern, s string) bool {
	set := `UPDATE "Security" SET "Code" = ?`
	if p.d == PostgreSQL {
		set = `UPDATE "Security" SET "Code" = $1`
	}
	if _, err := p.db.Exec(set, s); err != nil {
		t.Fatal(err)
	}
	stmt := &iql.Select{Table: "Security", Columns: []string{"Id"},
		Where: &iql.Compare{Column: "Code", Op: op, Values: []iql.Literal{iql.StringLiteral(pattern)}}}
	st, err := Generate(p.d, testCatalog, stmt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := p.db.Query(st.SQL, st.Args...)
	if err != nil {
		t.Fatalf("%s %q: %v", st.SQL, st.Args, err)
	}
	defer rows.Close()
	found := rows.Next()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}

// FuzzPatternSemantics checks BEGINS, CONTAINS and LIKE on real engines against matchIQL:
// on SQLite always, on PostgreSQL too when GATEHOUSE_TEST_POSTGRES is set. It is what proves
// that the GLOB and LIKE escaping leaves no metacharacter of the user's active and that
// matching is case-sensitive.
func FuzzPatternSemantics(f *testing.F) {
	for _, s := range []struct {
		op         uint8
		pattern, s string
	}{
		{uint8(iql.OpLike), "B*", "BHP"}, {uint8(iql.OpLike), "B*", "bhp"},
		{uint8(iql.OpLike), "B%P", "BHP"}, {uint8(iql.OpLike), "B_P", "BHP"},
		{uint8(iql.OpLike), "a?c", "abc"}, {uint8(iql.OpLike), "[a]*", "a"},
		{uint8(iql.OpLike), `\*`, `\x`}, {uint8(iql.OpLike), `*\`, `x\`},
		{uint8(iql.OpLike), "**a**b*", "xaxbx"}, {uint8(iql.OpLike), "", ""},
		{uint8(iql.OpBegins), "%", "x"}, {uint8(iql.OpBegins), "_", "x"},
		{uint8(iql.OpBegins), "*", "x"}, {uint8(iql.OpContains), "[", "x[y"},
		{uint8(iql.OpContains), "É", "é"}, {uint8(iql.OpContains), `\%`, `a\%b`},
	} {
		f.Add(s.op, s.pattern, s.s)
	}
	dbs := []*patternDB{newPatternDB(f, openSQLite(f), SQLite)}
	if url := os.Getenv(postgresEnv); url != "" {
		db, err := sql.Open("pgx", url)
		if err != nil {
			f.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		f.Cleanup(func() { db.Close() })
		for _, q := range []string{"CREATE TEMPORARY TABLE x ()", "SET search_path TO pg_temp"} {
			if _, err := db.Exec(q); err != nil {
				f.Fatal(err)
			}
		}
		dbs = append(dbs, newPatternDB(f, db, PostgreSQL))
	}
	ops := []iql.Op{iql.OpBegins, iql.OpContains, iql.OpLike}
	f.Fuzz(func(t *testing.T, opIndex uint8, pattern, s string) {
		op := ops[int(opIndex)%len(ops)]
		for _, v := range []string{pattern, s} {
			if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
				return // not a value IQL accepts
			}
		}
		want := matchIQL(op, pattern, s)
		for _, p := range dbs {
			if got := p.matches(t, op, pattern, s); got != want {
				t.Fatalf("%s: %q %s %q = %v, want %v", p.d, s, op, pattern, got, want)
			}
		}
	})
}
