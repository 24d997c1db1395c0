package pgengine

import (
	"context"
	"errors"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestExecDomainCheck: a domain's CHECK is a constraint too. (The constraints of every
// engine are the conformance suite's Writes case.)
func TestExecDomainCheck(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	_, err := e.Exec(context.Background(), []sqlgen.Statement{
		{SQL: `INSERT INTO "Security" ("Code", "Exchange", "Ask") VALUES ('NEW', 'ASX', 5)`}})
	if !errors.Is(err, engine.ErrConstraint) {
		t.Fatalf("error %v, want ErrConstraint", err)
	}
}

// TestExecOneStatementEach: a statement without arguments still goes through the
// extended protocol, which takes one statement only. (Atomicity is the conformance
// suite's Writes case.)
func TestExecOneStatementEach(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	_, err := e.Exec(context.Background(), []sqlgen.Statement{{SQL: `DELETE FROM "Item" WHERE "Id" = 1; DELETE FROM "Item"`}})
	if err == nil || count(t, e, "Item") != 1 {
		t.Fatalf("two statements in one: %v", err)
	}
}
