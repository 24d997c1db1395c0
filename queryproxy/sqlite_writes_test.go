package queryproxy_test

// Writes over SQLite that SQLite itself refuses (a key of the wrong type, a generated
// column): each is the client's mistake, never a 500. Each test failed on the code it was
// written against, and says what should hold and what happened before its fix.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqliteengine"
)

// notesSchema is a per-user table with a client-chosen INTEGER PRIMARY KEY (SQLite's
// rowid alias, which takes integers only) and a generated column; writable by any
// signed-in "attackerN" (the market scope).
const notesSchema = `
CREATE TABLE Note (
	Id    INTEGER PRIMARY KEY,
	Owner TEXT NOT NULL,
	Body  TEXT,
	Len   INTEGER GENERATED ALWAYS AS (length(Body)) VIRTUAL
);
INSERT INTO Note (Id, Owner, Body) VALUES (1, 'attacker1', 'mine'), (2, 'attacker2', 'theirs');`

var notesPolicy = []queryproxy.TablePolicy{
	{Table: "Note", Read: []string{"Service/Market"}, Write: []string{"Service/Market"}, Owner: "Owner"},
}

func notesJSONError(body string) bool {
	var v struct{ Error *struct{ Code string } }
	return json.Unmarshal([]byte(body), &v) == nil && v.Error != nil && v.Error.Code != ""
}

// notesUnchanged checks that attacker1 still sees exactly its one row.
func notesUnchanged(t *testing.T, s *testService) {
	t.Helper()
	r := s.query(t, "attacker1", `select Id, Body from Note`)
	if r.status != 200 || !strings.HasSuffix(strings.TrimSpace(r.body), `"Rows":[[1,"mine"]]}`) {
		t.Errorf("the table changed: %d %s", r.status, r.body)
	}
}

// TestSQLiteKeyTypeMismatchIs400: a value an INTEGER PRIMARY KEY cannot take (a
// word, a fraction) in an insert or an update is the client's mistake: 400 with a JSON
// query error, as PostgreSQL's engine answers the same statement (22P02 -> 400
// invalid_statement), never 500; nothing changes.
//
// Before its fix: SQLite answers SQLITE_MISMATCH ("datatype mismatch"), which
// sqliteengine.classify does not classify, so any writer gets 500 internal_error, logged
// at error level, once per request (the error log and 5xx metrics are the caller's to
// flood).
func TestSQLiteKeyTypeMismatchIs400(t *testing.T) {
	s := serviceWithTables(t, sqliteengine.Config{}, notesSchema, notesPolicy, nil)
	for _, tr := range []struct{ path, ct, body string }{
		{"/query", textPlain, `insert into Note (Id, Body) values ('abc', 'x')`},
		{"/query", textPlain, `insert into Note (Id, Body) values (1.5, 'x')`},
		{"/query", textPlain, `update Note set Id = 'abc' where Id = 1`},
		{"/query/Note/insert", appJSON, `{"Id":"abc","Body":"x"}`},
	} {
		st, body, _ := timedPost(t, s.srv.URL+tr.path, "attacker1", tr.ct, tr.body, 10*time.Second)
		if st != 400 || !notesJSONError(body) {
			t.Errorf("%s %s: %d %s, want 400", tr.path, tr.body, st, body)
		}
	}
	notesUnchanged(t, s)
}

// TestSQLiteGeneratedColumnWriteRefused: a generated column cannot be written;
// naming one in an insert or a SET must be refused as a read-only column is (403), or at
// least with a 4xx query error, never 500; nothing changes.
//
// Before its fix: the catalog lists generated columns (pragma_table_xinfo hidden 2 and 3) as
// ordinary ones, and SQLite's "cannot INSERT into generated column" / "cannot UPDATE
// generated column" (SQLITE_ERROR) is unclassified: 500 internal_error.
func TestSQLiteGeneratedColumnWriteRefused(t *testing.T) {
	s := serviceWithTables(t, sqliteengine.Config{}, notesSchema, notesPolicy, nil)
	for _, tr := range []struct{ path, ct, body string }{
		{"/query", textPlain, `insert into Note (Body, Len) values ('x', 5)`},
		{"/query", textPlain, `update Note set Len = 3 where Id = 1`},
		{"/query/Note/insert", appJSON, `{"Body":"x","Len":5}`},
	} {
		st, body, _ := timedPost(t, s.srv.URL+tr.path, "attacker1", tr.ct, tr.body, 10*time.Second)
		if st < 400 || st >= 500 || !notesJSONError(body) {
			t.Errorf("%s %s: %d %s, want a 4xx query error", tr.path, tr.body, st, body)
		}
	}
	notesUnchanged(t, s)
}
