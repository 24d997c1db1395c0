package pgengine

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func TestColumnType(t *testing.T) {
	tests := map[uint32]sqlgen.Type{
		pgtype.TextOID: sqlgen.String, pgtype.VarcharOID: sqlgen.String, pgtype.BPCharOID: sqlgen.String,
		pgtype.NameOID: sqlgen.String, pgtype.QCharOID: sqlgen.String,
		pgtype.Int2OID: sqlgen.Integer, pgtype.Int4OID: sqlgen.Integer, pgtype.Int8OID: sqlgen.Integer,
		pgtype.NumericOID: sqlgen.Decimal, pgtype.Float4OID: sqlgen.Decimal, pgtype.Float8OID: sqlgen.Decimal,
		pgtype.BoolOID:      sqlgen.Boolean,
		pgtype.TimestampOID: sqlgen.DateTime, pgtype.TimestamptzOID: sqlgen.DateTime, pgtype.DateOID: sqlgen.DateTime,
		pgtype.TimeOID: sqlgen.DateTime, pgtype.TimetzOID: sqlgen.DateTime,
		pgtype.ByteaOID: sqlgen.Binary,
		// Everything else is its text.
		pgtype.UUIDOID: sqlgen.String, pgtype.JSONBOID: sqlgen.String, pgtype.TextArrayOID: sqlgen.String,
		pgtype.IntervalOID: sqlgen.String, pgtype.OIDOID: sqlgen.String, 790 /* money */ : sqlgen.String,
		99999: sqlgen.String, // an enum or another type of the database
	}
	for oid, want := range tests {
		if got := columnType(oid); got != want {
			t.Errorf("columnType(%d) = %s, want %s", oid, got, want)
		}
	}
}

// TestTextKind: of the types reported as String, the text types compare as themselves,
// uuid as itself but in a pattern, inet as abbrev's text, every other as its text.
func TestTextKind(t *testing.T) {
	tests := map[uint32]sqlgen.Text{
		pgtype.TextOID: sqlgen.TextType, pgtype.VarcharOID: sqlgen.TextType, pgtype.BPCharOID: sqlgen.TextType,
		pgtype.UUIDOID: sqlgen.TextUUID,
		pgtype.InetOID: sqlgen.TextInet,
		pgtype.NameOID: sqlgen.TextCast, pgtype.QCharOID: sqlgen.TextCast, pgtype.JSONOID: sqlgen.TextCast,
		pgtype.JSONBOID: sqlgen.TextCast, pgtype.TextArrayOID: sqlgen.TextCast, pgtype.IntervalOID: sqlgen.TextCast,
		pgtype.CIDROID: sqlgen.TextCast,
		99999:          sqlgen.TextCast, // an enum, citext or another type of the database
	}
	for oid, want := range tests {
		if got := textKind(oid); got != want {
			t.Errorf("textKind(%d) = %d, want %d", oid, got, want)
		}
	}
}

func TestCatalog(t *testing.T) {
	e, _ := openTest(t, Config{}, testSchema+`
		CREATE TABLE "Order" ("OrderId" bigint GENERATED ALWAYS AS IDENTITY, "Price" numeric,
			"Total" numeric GENERATED ALWAYS AS ("Price" * 2) STORED, "Gone" text);
		ALTER TABLE "Order" DROP COLUMN "Gone";
		CREATE MATERIALIZED VIEW "Dear" AS SELECT "Code", "LastPrice" FROM "Security" WHERE "LastPrice" > 100;
		CREATE TABLE "Tick" ("At" timestamptz NOT NULL, "Px" numeric) PARTITION BY RANGE ("At");
		CREATE TABLE "Tick2026" PARTITION OF "Tick" FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
		CREATE TABLE pg_class ("Shadowed" text);
		CREATE TABLE "lower" ("a" text);
		CREATE SCHEMA other;
		CREATE TABLE other."Elsewhere" ("x" text);`)
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range cat.Tables {
		names = append(names, tb.Name)
	}
	// Sorted byte-wise; views and materialized views, a partitioned table but not its
	// partition; not a table named like one of pg_catalog; not another schema's.
	if got := strings.Join(names, ","); got != "Cheap,Dear,Item,Order,Security,Tick,lower" {
		t.Fatalf("tables %s", got)
	}
	order, _ := cat.Table("order")
	// OrderId is an identity always assigned and Total a generated column: never written.
	want := []sqlgen.Column{{Name: "OrderId", Type: sqlgen.Integer, Num: sqlgen.NumInt64, Generated: true},
		{Name: "Price", Type: sqlgen.Decimal, Num: sqlgen.NumDecimalOf(0, 0)},
		{Name: "Total", Type: sqlgen.Decimal, Num: sqlgen.NumDecimalOf(0, 0), Generated: true}}
	if !equal(order.Columns, want) {
		t.Fatalf("Order columns %v, want %v", order.Columns, want)
	}
	if dear, _ := cat.Table("Dear"); !equal(dear.Columns, []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "LastPrice", Type: sqlgen.Decimal, Num: sqlgen.NumDecimalOf(12, 4)}}) {
		t.Fatalf("Dear columns %v", dear.Columns)
	}
}

// TestCatalogSchema: another schema's catalog, and statements find its tables (the
// search path), not those of public with the same name.
func TestCatalogSchema(t *testing.T) {
	dsn, _ := newDatabase(t, testSchema+`
		CREATE SCHEMA "Market Data";
		CREATE TABLE "Market Data"."Security" ("Code" text, "Venue" text);
		INSERT INTO "Market Data"."Security" VALUES ('ZZZ', 'CXA');`)
	e := openEngine(t, Config{DSN: dsn, Schema: "Market Data"})
	cat, err := e.Catalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tables) != 1 || cat.Tables[0].Name != "Security" || len(cat.Tables[0].Columns) != 2 {
		t.Fatalf("catalog %v", cat)
	}
	_, rows, err := queryAll(t, e, `SELECT "Code", "Venue" FROM "Security"`)
	if err != nil || len(rows) != 1 || rows[0][1] != "CXA" {
		t.Fatalf("rows %v, %v", rows, err)
	}
	if _, err := Open(context.Background(), Config{DSN: dsn, Schema: "nope"}); err == nil || !strings.Contains(err.Error(), `schema "nope" does not exist`) {
		t.Fatalf("a missing schema: %v", err)
	}
}

// TestCatalogCacheTypeChange: a change of a column's type is a change of schema: the
// catalog is read again at the next check. (The cache's other rules, and a new column and
// a renamed table, are the conformance suite's Catalog case.)
func TestCatalogCacheTypeChange(t *testing.T) {
	dsn, _ := newDatabase(t, testSchema)
	e := openEngine(t, Config{DSN: dsn})
	ctx := context.Background()
	prev, err := e.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, dsn, `ALTER TABLE "Security" ALTER COLUMN "Volume" TYPE text`)
	e.catalog.MarkStale() // check at once, not after the interval
	c, err := e.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if security, _ := c.Table("Security"); &c.Tables[0] == &prev.Tables[0] || security.Columns[4].Type != sqlgen.String {
		t.Fatalf("after the type change: catalog not read again: %v", c)
	}
}
