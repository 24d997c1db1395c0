package queryproxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// hostileValues are values that would change a statement were they
// concatenated into it: quotes, comments, stacked statements, quoted
// identifiers, look-alike characters, operator strings.
var hostileValues = []string{
	`BHP'; DELETE FROM "Order"; --`,
	`BHP" OR "1"="1`,
	`' OR '1'='1`,
	`'); DROP TABLE Security; --`,
	`BHP/*`, `*/ OR 1=1`,
	`%`, `_`, `*`, `[`, `\`, `\'`,
	"BHP\u02bc OR 1=1",                   // modifier letter apostrophe
	"BHP\uff07 OR \uff071\uff07=\uff071", // fullwidth apostrophes
	`"Security"."Code"`,
	`= ANY (SELECT Owner FROM "Order")`,
	`OR`, `IS NOT NULL`, `LIKE`, `; ATTACH DATABASE 'x.db' AS x`,
}

// statementShape is what a traced statement may look like: quoted
// identifiers, placeholders and fixed keywords only; no literal text.
var statementShape = regexp.MustCompile(`^[A-Za-z0-9_ ,.()"?=<>*!+\-\[\]]*$`)

// TestInjection sends each hostile value as a string through all three
// endpoints and checks, in the engine's statement trace, that nothing ran
// but the intended statement: one statement per request, with the value
// only ever as a bind argument. The tables' contents are unchanged.
func TestInjection(t *testing.T) {
	s := newService(t, nil)
	count := func(table string) int {
		return len(s.query(t, "trader", "select * from "+table+" limit 1000").result.Rows)
	}
	securities, orders := count("Security"), count("Order")
	s.mu.Lock()
	s.trace = nil
	s.mu.Unlock()

	quoted := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	for _, v := range hostileValues {
		jv, _ := json.Marshal(v)
		requests := []struct{ path, ct, body string }{
			{"/query", textPlain, "select Code from Security where Name = " + quoted(v)},
			{"/query", textPlain, "select Code from Security where Name CONTAINS " + quoted(v)},
			{"/query", textPlain, "select Code from Security where Code IN [" + quoted(v) + ", 'BHP']"},
			{"/query/Security/select", appJSON, `[{"ColumnName":"Name","Operator":"LIKE","Value":` + string(jv) + `}]`},
			{"/query/Security/select", appJSON, `[{"ColumnName":"Code","Operator":"BEGINS","Value":` + string(jv) + `}]`},
			{"/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":` + string(jv) + `,"Exchange":"ASX","Side":"Buy","Quantity":1}`},
		}
		for _, rq := range requests {
			s.mu.Lock()
			n := len(s.trace)
			s.mu.Unlock()
			r := s.do(t, "trader", "POST", rq.path, rq.ct, rq.body)
			if r.status != 200 && r.status != http.StatusConflict {
				t.Fatalf("%s %s: %d %s", rq.path, rq.body, r.status, r.body)
			}
			s.mu.Lock()
			ran := s.trace[n:]
			s.mu.Unlock()
			if len(ran) != 1 {
				t.Fatalf("%s %s: ran %d statements: %q", rq.path, rq.body, len(ran), ran)
			}
			if strings.Contains(ran[0], v) || !statementShape.MatchString(ran[0]) || strings.Count(ran[0], ";") > 0 {
				t.Fatalf("%s %s: statement %q", rq.path, rq.body, ran[0])
			}
		}
	}
	// The inserts whose Code named no security broke the foreign key (409):
	// nothing was written, nothing else changed.
	if count("Security") != securities || count("Order") != orders {
		t.Fatalf("tables changed: securities %d -> %d, orders %d -> %d", securities, count("Security"), orders, count("Order"))
	}

	// Names are identifiers from the catalog only: a quoted identifier, a
	// look-alike letter or SQL in a name is refused before any statement.
	s.mu.Lock()
	n := len(s.trace)
	s.mu.Unlock()
	for _, stmt := range []string{
		`select "Code" from Security`,
		`select Code from "Security"`,
		`select Code from Security where "Owner" = 'x'`,
		"select Code from Securi\u0074y\u200b",
		"select Code from \u0405ecurity", // Cyrillic capital DZE
		"select Code from Securit\u0443", // Cyrillic у
		"select Code, (select Owner from Order) from Security",
		"select Code from Security union select Owner from Order",
		"select Code from Security where Code = 'BHP' or Owner = Owner",
	} {
		r := s.query(t, "trader", stmt)
		if r.status != 400 && r.status != 404 {
			t.Fatalf("%s: %d %s", stmt, r.status, r.body)
		}
	}
	for _, path := range []string{"/query/Security%22%3B%20DROP/select", "/query/%D0%85ecurity/select", "/query/Security/select?columns=Code,%22Name%22"} {
		if r := s.do(t, "trader", "POST", path, appJSON, "[]"); r.status != 400 && r.status != 404 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.trace) != n {
		t.Fatalf("refused statements ran: %q", s.trace[n:])
	}
}

// slowEngine holds every Query until release is closed.
type slowEngine struct {
	engine.Engine
	started chan struct{}
	release chan struct{}
}

func (e *slowEngine) Query(ctx context.Context, st sqlgen.Statement) (engine.Rows, error) {
	e.started <- struct{}{}
	<-e.release
	return e.Engine.Query(ctx, st)
}

// TestConcurrencyPerUser: a burst of parallel requests from one user gets
// exactly MaxConcurrentPerUser through and 429 for the rest, while
// another user is not affected.
func TestConcurrencyPerUser(t *testing.T) {
	slow := &slowEngine{started: make(chan struct{}, 64), release: make(chan struct{})}
	s := newService(t, func(c *queryproxy.Config) {
		c.MaxConcurrentPerUser = 3
		slow.Engine = c.Engine
		c.Engine = slow
	})
	var once sync.Once
	release := func() { once.Do(func() { close(slow.release) }) }
	t.Cleanup(release) // a failing test lets the held queries go before the server closes
	const burst = 20
	statuses := make(chan int, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			statuses <- s.query(t, "demo", "select Code from Market").status
		})
	}
	for range 3 {
		select {
		case <-slow.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the admitted queries did not start")
		}
	}
	// The 17 others are answered 429 while the 3 are held.
	rejected := 0
	for rejected < burst-3 {
		select {
		case st := <-statuses:
			if st != http.StatusTooManyRequests {
				t.Fatalf("status %d while 3 queries are running", st)
			}
			rejected++
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d answered 429", rejected, burst-3)
		}
	}
	release() // another user, and then this one, pass again
	if r := s.query(t, "trader", "select Code from Market"); r.status != 200 {
		t.Fatalf("another user: %d", r.status)
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 200 {
			t.Fatalf("an admitted query: %d", st)
		}
	}
	if r := s.query(t, "demo", "select Code from Market"); r.status != 200 {
		t.Fatalf("after the burst: %d", r.status)
	}
}

// TestResultCutWhileStreaming: a result that passes the row limit after
// its first bytes were sent ends without its closing "]}" and with the
// error trailer.
func TestResultCutWhileStreaming(t *testing.T) {
	s := newService(t, func(c *queryproxy.Config) { c.MaxRows = 20; c.ResultBufferSize = 256 })
	req, _ := http.NewRequest("POST", s.srv.URL+"/query", strings.NewReader("select * from Security"))
	req.Header.Set("Authorization", "Bearer demo")
	req.Header.Set("Content-Type", textPlain)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.HasSuffix(string(body), "]}") || !strings.HasPrefix(string(body), `{"Columns":`) || json.Valid(body) {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if got := resp.Trailer.Get(queryproxy.ErrorTrailer); got != queryproxy.CodeResultTooLarge {
		t.Fatalf("trailer %q", got)
	}
}

// failingEngine fails every Query and Exec with err.
type failingEngine struct {
	engine.Engine
	err error
}

func (e failingEngine) Query(context.Context, sqlgen.Statement) (engine.Rows, error) {
	return nil, e.err
}

func (e failingEngine) Exec(context.Context, []sqlgen.Statement) (int64, error) { return 0, e.err }

// TestEngineFailures: the engine's error classes map to their statuses,
// with no driver text in the body.
func TestEngineFailures(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("sqlite: interrupted (9): %w", engine.ErrTimeout), 504, "timeout"},
		{fmt.Errorf("sqlite: database is locked (5): %w", engine.ErrUnavailable), 503, "unavailable"},
		{fmt.Errorf("sqlite: UNIQUE constraint failed: Order.OrderId: %w", engine.ErrConstraint), 409, "constraint_violation"},
		{errors.New("sqlite: SQL logic error near \"x\""), 500, "internal_error"},
	} {
		t.Run(tt.code, func(t *testing.T) {
			s := newService(t, func(c *queryproxy.Config) { c.Engine = failingEngine{c.Engine, tt.err} })
			for _, r := range []*response{
				s.query(t, "trader", "select Code from Security"),
				s.do(t, "trader", "POST", "/query/Order/insert", appJSON, `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":1}`),
			} {
				if r.status != tt.status || r.result.Error == nil || r.result.Error.Code != tt.code {
					t.Fatalf("%d %s", r.status, r.body)
				}
				if strings.Contains(r.body, "sqlite") || strings.Contains(r.body, "Order.OrderId") {
					t.Fatalf("driver text in %s", r.body)
				}
			}
		})
	}
}
