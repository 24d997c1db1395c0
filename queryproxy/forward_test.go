package queryproxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// TestForwardedStatementAndHeadersConfined: through the pass-through (iq) engine, a
// string value that tries to break out of its quotes, headers a client could forge
// (identity, cookies, hop-by-hop, a second Authorization) and a CRLF in Request-Id reach
// the upstream neither as IQL nor as headers: the upstream gets canonical IQL that parses
// to the same one comparison, and only its own headers. (It held when written.)
func TestForwardedStatementAndHeadersConfined(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Columns":{"Code":{"Index":0,"Type":"String"}},"Rows":[]}`)
	}))
	defer up.Close()
	fw, err := iqengine.New(iqengine.Config{URL: up.URL, Catalog: sqlgen.Catalog{Tables: []sqlgen.Table{
		{Name: "Security", Columns: []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "Name", Type: sqlgen.String}}},
		{Name: "Order", Columns: []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "Owner", Type: sqlgen.String}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := queryproxy.New(queryproxy.Config{Forwarder: fw, Tables: []queryproxy.TablePolicy{
		{Table: "Security", Read: []string{"Service/Market"}},
		{Table: "Order", Read: []string{"Service/Trading"}},
	}, Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
		return &queryproxy.Caller{Subject: "u1", ClientID: "c", Scopes: []string{"Service/Market"}, Token: "tok-u1"}, true
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	evil := []string{
		`select Code from Security where Name = 'x'' OR Code IS NULL OR Name = ''y'`,
		`select Code from Security where Name = "x' OR 1=1 --"`,
		`select Code from Security where Name = 'a
b'`,
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", srv.URL+"/query", strings.NewReader(evil[i%len(evil)]))
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("X-Forwarded-User", "admin")
			req.Header.Set("X-User", "admin")
			req.Header.Set("Cookie", "session=admin")
			req.Header.Set("Connection", "X-Secret")
			req.Header.Add("Authorization", "Bearer other")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	// a Request-Id with CRLF never gets there (net/http's client refuses to send it;
	// the handler refuses anything but visible ASCII)
	if st, body, _ := timedPost(t, srv.URL+"/query", "x", textPlain, "select * from Order", 5*time.Second); st != 403 {
		t.Errorf("a read of Order without the scope through the forwarder: %d %s", st, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("nothing forwarded")
	}
	for i, r := range got {
		for _, hdr := range []string{"X-Forwarded-User", "X-User", "Cookie", "X-Secret"} {
			if r.Header.Get(hdr) != "" {
				t.Errorf("header %s forwarded", hdr)
			}
		}
		if a := r.Header.Values("Authorization"); len(a) != 1 || a[0] != "Bearer tok-u1" {
			t.Errorf("Authorization upstream %q", a)
		}
		st, err := iql.Parse(bodies[i], iql.Limits{})
		if err != nil {
			t.Errorf("upstream got IQL it cannot parse: %q: %v", bodies[i], err)
			continue
		}
		sel, ok := st.(*iql.Select)
		if !ok || sel.Table != "Security" {
			t.Errorf("upstream got %q", bodies[i])
			continue
		}
		if _, one := sel.Where.(*iql.Compare); !one {
			t.Errorf("a value changed the shape of the forwarded statement: %q", bodies[i])
		}
	}
}

// iqWriteService is the query handler over the iq engine in front of the
// upstream at url (time limit timeout), with one table, Order, that the
// one caller may write, and an observer of its log.
func iqWriteService(t *testing.T, url string, timeout time.Duration) (*httptest.Server, *observer.ObservedLogs) {
	t.Helper()
	fw, err := iqengine.New(iqengine.Config{URL: url, Timeout: timeout, Catalog: sqlgen.Catalog{Tables: []sqlgen.Table{
		{Name: "Order", Columns: []sqlgen.Column{{Name: "Code", Type: sqlgen.String}, {Name: "Quantity", Type: sqlgen.Integer}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	h, err := queryproxy.New(queryproxy.Config{Forwarder: fw, Logger: zap.New(core),
		Tables: []queryproxy.TablePolicy{{Table: "Order", Read: []string{"T"}, Write: []string{"T"}}},
		Authenticate: func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
			return &queryproxy.Caller{Subject: "u1", ClientID: "c", Scopes: []string{"T"}, Token: "tok"}, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, logs
}

// TestForwardWriteFateAudited: when the gateway cannot know whether
// a forwarded write was applied (its answer came after the time limit),
// its audit entry says so (outcome "unknown", no rows_affected), and so
// does the answer to the caller (502 outcome_unknown, never an invitation
// to retry); a caller hanging up does not cut the write short (it runs to
// its answer or the time limit).
//
// Before its fix: an INSERT the upstream applied but answered late (or
// whose caller hung up once it was sent) was answered 504 (or logged 499)
// and audited with rows_affected 0 and outcome timeout or canceled, a
// write that happened recorded as one that did not, and a caller could
// produce such entries at will by hanging up. (The SQL engines roll the
// transaction back on cancel, so for them 0 is true; an HTTP upstream
// gives no such guarantee.)
func TestForwardWriteFateAudited(t *testing.T) {
	var applied atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		applied.Add(1) // the order is placed upstream
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"RowsAffected":1}`)
	}))
	defer up.Close()
	srv, logs := iqWriteService(t, up.URL, 300*time.Millisecond)

	// 1. the upstream's answer is late: 504.
	st, body, _ := timedPost(t, srv.URL+"/query", "tok", "text/plain", "insert into Order (Code, Quantity) values ('BHP', 100)", 5*time.Second)
	// 2. the caller hangs up once the insert was sent.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/query", strings.NewReader("insert into Order (Code, Quantity) values ('BHP', 100)"))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "text/plain")
	_, _ = http.DefaultClient.Do(req)
	cancel()
	time.Sleep(500 * time.Millisecond)

	entries := logs.FilterMessage("query write").All()
	t.Logf("caller got %d %s; upstream applied %d inserts; %d audit entries", st, strings.TrimSpace(body), applied.Load(), len(entries))
	if applied.Load() != 2 || len(entries) != 2 {
		t.Fatalf("setup: applied %d, audited %d", applied.Load(), len(entries))
	}
	for _, e := range entries {
		m := e.ContextMap()
		if m["outcome"] != "unknown" || m["rows_affected"] != nil {
			t.Errorf("a write the upstream applied is audited as outcome=%v rows_affected=%v", m["outcome"], m["rows_affected"])
		}
	}
	if st != http.StatusBadGateway || !strings.Contains(body, `"Code":"outcome_unknown"`) || strings.Contains(body, "try again") {
		t.Errorf("the caller of a write whose fate is unknown got %d %s", st, body)
	}
}

// TestHangUpInsertRunsToAnswer: a caller hanging up once a forwarded insert
// was sent does not cut it short: the upstream answers within the time
// limit, so the audit says ok, rows_affected 1.
func TestHangUpInsertRunsToAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"RowsAffected":1}`)
	}))
	defer up.Close()
	srv, logs := iqWriteService(t, up.URL, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/query", strings.NewReader("insert into Order (Code) values ('BHP')"))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "text/plain")
	_, _ = http.DefaultClient.Do(req)
	time.Sleep(600 * time.Millisecond)
	e := logs.FilterMessage("query write").All()
	if len(e) != 1 || e[0].ContextMap()["outcome"] != "ok" {
		t.Fatalf("audit %v", e)
	}
}
