package queryproxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/iqengine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

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

// TestAttackForwardWriteFateAudited: when the gateway cannot know whether
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
func TestAttackForwardWriteFateAudited(t *testing.T) {
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
