package enginetest

import (
	"context"
	"testing"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// testQueryCannotWrite sends writes through Query: each fails, and nothing changes. (Each
// engine's own tests add the statements of its dialect: ATTACH and PRAGMA on SQLite,
// TRUNCATE and COMMIT on PostgreSQL, and so on.)
func testQueryCannotWrite(t *testing.T, open Open) {
	e := open(t, Options{})
	securities := count(t, e, "Security")
	for name, stmt := range map[string]string{
		"insert":            `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'crafted', 1)`,
		"insert returning":  `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'crafted', 1) RETURNING "Id"`,
		"update":            `UPDATE "Security" SET "LastPrice" = 0`,
		"delete":            `DELETE FROM "Security"`,
		"create table":      `CREATE TABLE "Crafted" (x integer)`,
		"create temp table": `CREATE TEMP TABLE "Crafted" (x integer)`,
		"drop table":        `DROP TABLE "Item"`,
		"two statements":    `SELECT 1; INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (2, 'crafted', 1)`,
		"with insert":       `WITH c(x) AS (SELECT 2) INSERT INTO "Item" ("Id", "Name", "Qty") SELECT x, 'crafted', x FROM c`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := queryAll(context.Background(), e, sqlgen.Statement{SQL: stmt}); err == nil {
				t.Fatalf("%s succeeded through Query", stmt)
			}
			if n := count(t, e, "Item"); n != 1 {
				t.Fatalf("Item has %d rows after %s, want 1", n, stmt)
			}
			if n := count(t, e, "Security"); n != securities {
				t.Fatalf("Security has %d rows after %s, want %d", n, stmt, securities)
			}
		})
	}
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkCatalog(t, cat)
}
