package pgengine

import (
	"fmt"
	"testing"
)

// TestPreparedBounded: a connection keeps at most maxPrepared statements prepared for
// reads, however many distinct statements it runs; each still answers right.
func TestPreparedBounded(t *testing.T) {
	e, _ := openTest(t, Config{MaxConns: 1}, "")
	for i := range maxPrepared + 40 {
		_, rows, err := queryAll(t, e, fmt.Sprintf(`SELECT %d AS "N", count(*) AS "Items" FROM "Item"`, i))
		if err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		if rows[0][0] != int64(i) || rows[0][1] != int64(1) {
			t.Fatalf("statement %d: %v", i, rows)
		}
	}
	// One connection: this runs where the others ran.
	_, rows, err := queryAll(t, e, `SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'gatehouse_read_%'`)
	if err != nil {
		t.Fatal(err)
	}
	if n := rows[0][0].(int64); n > maxPrepared || n < 4 {
		t.Fatalf("%d statements prepared on the connection, want 4 to %d", n, maxPrepared)
	}
}

// TestPreparedStalePlan: a prepared statement whose table changed shape fails at most
// once (PostgreSQL refuses a cached plan whose result type changed), and the next run
// prepares it again and sees the new shape.
func TestPreparedStalePlan(t *testing.T) {
	e, _ := openTest(t, Config{MaxConns: 1}, "")
	const q = `SELECT * FROM "Item"`
	cols, _, err := queryAll(t, e, q)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, e.cfg.DSN, `ALTER TABLE "Item" ADD COLUMN "Colour" text`)
	var after int
	for range 2 {
		c, _, err := queryAll(t, e, q)
		if err == nil {
			after = len(c)
			break
		}
		t.Logf("after ALTER TABLE: %v", err)
	}
	if after != len(cols)+1 {
		t.Fatalf("after ALTER TABLE: %d columns, want %d", after, len(cols)+1)
	}
}
