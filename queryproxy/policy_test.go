package queryproxy

import (
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestAuthorizeChangesNothing: an insert into a per-user table that names the owner
// column with the caller's own value is planned without it, and the caller's statement
// stays as it was; one that does not name it is planned as it is. It failed when
// authorize deleted the column from the caller's statement itself.
func TestAuthorizeChangesNothing(t *testing.T) {
	p, err := NewPolicy([]TablePolicy{{Table: "Order", Read: []string{"r"}, Write: []string{"w"}, Owner: "Owner"}})
	if err != nil {
		t.Fatal(err)
	}
	cat := sqlgen.Catalog{Tables: []sqlgen.Table{{Name: "Order", Columns: []sqlgen.Column{
		{Name: "Id", Type: sqlgen.Integer}, {Name: "Owner", Type: sqlgen.String}, {Name: "Code", Type: sqlgen.String}}}}}
	caller := &Caller{Subject: "u1", Scopes: []string{"r", "w"}}
	for _, tt := range []struct{ src, planned string }{
		{`insert into Order (owner, Code) values ('u1', 'A'), ('u1', 'B')`, `INSERT INTO Order (Code) VALUES ('A'), ('B')`},
		{`insert into Order (Code, Owner) values ('A', 'u1')`, `INSERT INTO Order (Code) VALUES ('A')`},
		{`insert into Order (Code) values ('A')`, `INSERT INTO Order (Code) VALUES ('A')`},
	} {
		stmt, err := iql.Parse(tt.src, iql.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		before := iql.Format(stmt)
		pl, e := p.authorize(cat, caller, stmt, nil)
		if e != nil {
			t.Fatalf("%s: %v", tt.src, e)
		}
		if got := iql.Format(pl.stmt); got != tt.planned {
			t.Errorf("%s: planned %s, want %s", tt.src, got, tt.planned)
		}
		if got := iql.Format(stmt); got != before {
			t.Errorf("%s: authorize changed the caller's statement to %s", tt.src, got)
		}
	}
}
