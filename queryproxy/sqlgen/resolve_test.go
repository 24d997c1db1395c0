package sqlgen

import (
	"errors"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
)

// TestResolve: every name of a statement is written in the catalog's spelling, "*" as the
// table's columns, and a select reports its result columns; the statement resolved is not
// changed.
func TestResolve(t *testing.T) {
	security, _ := testCatalog.Table("Security")
	for _, tt := range []struct{ src, want, cols string }{
		{`select code, PRICE from security where name = 'BHP' and (volume > 1 or not active = true)`,
			`SELECT Code, Price FROM Security WHERE Name = 'BHP' AND (Volume > 1 OR NOT Active = TRUE)`, "Code,Price"},
		{`select * from Security order by price desc, CODE limit 3`,
			`SELECT Id, Code, Name, Price, Volume, Listed, Active FROM Security ORDER BY Price DESC, Code LIMIT 3`,
			"Id,Code,Name,Price,Volume,Listed,Active"},
		{`insert into SECURITY (code, name) values ('A', 'a'), ('B', 'b')`, `INSERT INTO Security (Code, Name) VALUES ('A', 'a'), ('B', 'b')`, ""},
		{`update security set NAME = 'x' where code in ['A', 'B']`, `UPDATE Security SET Name = 'x' WHERE Code IN ['A', 'B']`, ""},
		{`delete from security where id between 1 and 2`, `DELETE FROM Security WHERE Id BETWEEN 1 AND 2`, ""},
	} {
		stmt := mustParse(t, tt.src)
		before := iql.Format(stmt)
		out, cols, err := Resolve(security, stmt)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		var names string
		for i, c := range cols {
			if i > 0 {
				names += ","
			}
			names += c.Name
		}
		if got := iql.Format(out); got != tt.want || names != tt.cols {
			t.Errorf("%s:\n%s (%s)\nwant\n%s (%s)", tt.src, got, names, tt.want, tt.cols)
		}
		if iql.Format(stmt) != before {
			t.Errorf("%s: the statement resolved changed to %s", tt.src, iql.Format(stmt))
		}
	}
}

// TestResolveUnknown: a name the table lacks is an *UnknownError naming it, wherever it
// stands.
func TestResolveUnknown(t *testing.T) {
	security, _ := testCatalog.Table("Security")
	for _, src := range []string{
		`select Nope from Security`,
		`select Code from Security where Code = 'A' or Nope = 1`,
		`select Code from Security order by Nope`,
		`insert into Security (Code, Nope) values ('A', 1)`,
		`update Security set Nope = 1 where Code = 'A'`,
		`update Security set Code = 'B' where Nope = 1`,
		`delete from Security where not Nope = 1`,
	} {
		_, _, err := Resolve(security, mustParse(t, src))
		if u, ok := errors.AsType[*UnknownError](err); !ok || u.Kind != "column" || u.Name != "Nope" || u.Table != "Security" {
			t.Errorf("%s: %v, want the unknown column Nope", src, err)
		}
	}
}
