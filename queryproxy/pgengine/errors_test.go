package pgengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func TestClassify(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithTimeout(live, -time.Second)
	defer cancel2()
	limitedOut, cancel3 := context.WithTimeout(live, -time.Second) // the statement's limit, under a live parent
	defer cancel3()
	pg := func(code string) error { return &pgconn.PgError{Severity: "ERROR", Code: code, Message: "m"} }
	tests := []struct {
		name            string
		parent, limited context.Context
		err             error
		want            error // nil: no sentinel
	}{
		{"unique", live, live, pg("23505"), engine.ErrConstraint},
		{"check", live, live, pg("23514"), engine.ErrConstraint},
		{"foreign key", live, live, pg("23503"), engine.ErrConstraint},
		{"not null", live, live, pg("23502"), engine.ErrConstraint},
		{"wrapped", live, live, fmt.Errorf("statement 2 of 3: %w", pg("23505")), engine.ErrConstraint},
		{"server statement_timeout", live, live, pg("57014"), engine.ErrTimeout},
		{"engine's time limit", live, limitedOut, pg("57014"), engine.ErrTimeout},
		{"client gone", canceled, canceled, pg("57014"), engine.ErrCanceled},
		{"client gone, any error", canceled, canceled, io.ErrUnexpectedEOF, engine.ErrCanceled},
		{"caller's deadline", expired, expired, pg("57014"), engine.ErrTimeout},
		{"deadline error", live, live, fmt.Errorf("x: %w", context.DeadlineExceeded), engine.ErrTimeout},
		{"connection exception", live, live, pg("08006"), engine.ErrUnavailable},
		{"too many connections", live, live, pg("53300"), engine.ErrUnavailable},
		{"admin shutdown", live, live, pg("57P01"), engine.ErrUnavailable},
		{"cannot connect now", live, live, pg("57P03"), engine.ErrUnavailable},
		{"lock not available", live, live, pg("55P03"), engine.ErrUnavailable},
		{"deadlock", live, live, pg("40P01"), engine.ErrUnavailable},
		{"serialization", live, live, pg("40001"), engine.ErrUnavailable},
		{"connect error", live, live, &pgconn.ConnectError{Config: &pgconn.Config{}}, engine.ErrUnavailable},
		{"eof", live, live, io.ErrUnexpectedEOF, engine.ErrUnavailable},
		{"closed pool", live, live, puddle.ErrClosedPool, engine.ErrUnavailable},
		{"closed engine", live, live, errClosed, engine.ErrUnavailable},
		{"undefined table", live, live, pg("42P01"), nil},
		{"syntax", live, live, pg("42601"), nil},
		{"invalid text", live, live, pg("22P02"), engine.ErrInvalidValue},
		{"bad datetime", live, live, pg("22007"), engine.ErrInvalidValue},
		{"read-only transaction", live, live, pg("25006"), nil},
		{"other", live, live, errors.New("x"), nil},
	}
	sentinels := []error{engine.ErrConstraint, engine.ErrTimeout, engine.ErrCanceled, engine.ErrUnavailable, engine.ErrInvalidValue}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.parent, tt.limited, tt.err)
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == tt.want) {
					t.Fatalf("classify = %v: is %v %v, want %v", got, s, errors.Is(got, s), tt.want)
				}
			}
			_, gotPG := errors.AsType[*pgconn.PgError](got)
			if _, isPG := tt.err.(*pgconn.PgError); isPG && !gotPG || !isPG && !errors.Is(got, tt.err) {
				t.Fatalf("classify = %v lost the cause", got)
			}
		})
	}
}

// TestErrorsQuoteNoValue: PostgreSQL's messages can quote a value of the statement; the
// engine's errors, which are logged, do not. The SQLSTATE and the names stay, and the
// server's error is still there for errors.AsType.
func TestErrorsQuoteNoValue(t *testing.T) {
	e, _ := openTest(t, Config{}, "")
	const secret = "Zq7-secret-value"
	_, _, err := queryAll(t, e, `SELECT "Code" FROM "Security" WHERE "Volume" = $1`, secret)
	pg, ok := errors.AsType[*pgconn.PgError](err)
	if err == nil || !ok || pg.Code != "22P02" || !strings.Contains(pg.Message, secret) {
		t.Fatalf("a number column compared with text: %v", err)
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "SQLSTATE 22P02") {
		t.Fatalf("error text %q", err)
	}
	_, err = e.Exec(context.Background(), []sqlgen.Statement{{SQL: `INSERT INTO "Item" ("Id", "Name", "Qty") VALUES (7, $1, 1), (8, $1, 2)`, Args: []any{secret}}})
	if pg, ok := errors.AsType[*pgconn.PgError](err); !ok || !strings.Contains(pg.Detail, secret) {
		t.Fatalf("a duplicate key: %v", err)
	}
	if s := err.Error(); strings.Contains(s, secret) || !strings.Contains(s, `SQLSTATE 23505 (table "Item") (constraint "Item_Name_key")`) ||
		!strings.HasPrefix(s, "running write: constraint violated: statement 1 of 1: ") {
		t.Fatalf("error text %q", s)
	}
	// A syntax error keeps its message: it names SQL, not values.
	_, _, err = queryAll(t, e, `SELEC 1`)
	if err == nil || !strings.Contains(err.Error(), `syntax error at or near "SELEC"`) {
		t.Fatalf("syntax error %v", err)
	}
}

// TestConnectionLost: when the server ends the engine's connections (a restart, an
// administrator), the next statement fails with ErrUnavailable or succeeds on a new
// connection; the one after it succeeds.
func TestConnectionLost(t *testing.T) {
	e, name := openTest(t, Config{MaxConns: 1}, "")
	if n := count(t, e, "Security"); n != 3 {
		t.Fatal(n)
	}
	a := admin(t)
	if _, err := a.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, _, err := queryAll(t, e, `SELECT 1`); err != nil && !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("after the server ended the connection: %v, want ErrUnavailable", err)
	} else {
		t.Logf("after the server ended the connection: %v", err)
	}
	if n := count(t, e, "Security"); n != 3 {
		t.Fatal(n)
	}
}

// TestPostgresBadValuesAre400: values the column's type refuses, sent in a parallel
// burst, are 400 with a JSON body naming no SQL, never 500, and no connection is lost.
// (It held when written.)
func TestPostgresBadValuesAre400(t *testing.T) {
	srv, _ := bigTableService(t, Config{MaxConns: 2})
	stmts := []string{
		`select Code from Security where Volume = 'abc'`,
		`select Code from Security where Updated = 'not a date'`,
		`select Code from Security where Updated > 'infinity'`,
		`select Code from Security where Volume IN [1, 'x', 2]`,
		`select Code from Security where LastPrice BETWEEN 'a' AND 'b'`,
		`select Code from Security where Volume = 99999999999999999999999999999999999`,
	}
	type res struct {
		st   int
		body string
		stmt string
	}
	out := make(chan res, 4*len(stmts))
	for range 4 {
		for i, s := range stmts {
			go func() {
				st, body, _ := postQuery(srv, fmt.Sprintf("attacker%d", i), s, 20*time.Second)
				out <- res{st, body, s}
			}()
		}
	}
	for range 4 * len(stmts) {
		r := <-out
		if r.st == 0 || r.st >= 500 || !strings.HasPrefix(r.body, "{") || strings.Contains(r.body, "SELECT") || strings.Contains(r.body, "$1") {
			t.Errorf("%s: %d %s", r.stmt, r.st, r.body)
		}
	}
	if st, body, _ := postQuery(srv, "demo", "SELECT Code FROM Market", 10*time.Second); st != 200 {
		t.Errorf("after the burst: %d %s", st, body)
	}
}

// TestPostgresNumberForDateTimeIs400: a number compared with a DateTime column is the
// client's mistake, 400. It failed when sqlgen let it through: bound as an int64 for a
// timestamptz parameter, which pgx cannot encode, it was answered 500 internal_error and
// logged at error level, once per request (a caller could flood the error log and the 5xx
// metrics at will).
func TestPostgresNumberForDateTimeIs400(t *testing.T) {
	srv, _ := bigTableService(t, Config{})
	for _, stmt := range []string{
		`select Code from Security where Updated = 123`,
		`select Code from Security where Updated BETWEEN 1 AND 2`,
	} {
		st, body, _ := postQuery(srv, "attacker1", stmt, 10*time.Second)
		if st != 400 {
			t.Errorf("%s: %d %s, want 400", stmt, st, body)
		}
	}
}
