package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestExecLocked: a write lock held by another program for longer than the busy timeout
// makes the engine unavailable, not a timeout.
func TestExecLocked(t *testing.T) {
	e := openTest(t, Config{BusyTimeout: 100 * time.Millisecond})
	other, err := sql.Open("sqlite", writerDSN(e.path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin() // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO Item (Name, Qty) VALUES ('two', 2)`}})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	// Reads go on meanwhile (WAL).
	if n := count(t, e, "Item"); n != 1 {
		t.Fatalf("Item has %d rows", n)
	}
}
