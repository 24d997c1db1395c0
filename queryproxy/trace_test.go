package queryproxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse/gatehouse/examples/querydb"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

// tracedService is newService behind a stand-in for Caddy's tracing
// directive: each request gets a span of a tracer provider of its own
// (not the global one, which stays a no-op), whose spans rec records.
func tracedService(t *testing.T, mod func(*queryproxy.Config)) (*testService, *tracetest.SpanRecorder) {
	t.Helper()
	s := newService(t, mod)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	s.srv.Close()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tp.Tracer("caddy").Start(r.Context(), "request")
		defer span.End()
		s.h.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(s.srv.Close)
	return s, rec
}

// querySpans are the spans of the last query rec saw: the query's, and
// its steps' by name.
func querySpans(t *testing.T, rec *tracetest.SpanRecorder) (sdktrace.ReadOnlySpan, map[string]sdktrace.ReadOnlySpan) {
	t.Helper()
	var query sdktrace.ReadOnlySpan
	var request sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "gatehouse.query":
			query = sp
		case "request":
			request = sp
		}
	}
	if query == nil || request == nil {
		t.Fatalf("no query span, or no request span, among %d", len(rec.Ended()))
	}
	if query.Parent().SpanID() != request.SpanContext().SpanID() {
		t.Fatalf("the query span's parent is %s, not the request's span", query.Parent().SpanID())
	}
	steps := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		if sp.Parent().SpanID() == query.SpanContext().SpanID() {
			steps[sp.Name()] = sp
		}
	}
	return query, steps
}

// attrs are a span's attributes as strings.
func attrs(sp sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range sp.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestTraceQuery: a traced request's query has a span, a child of the
// request's, with the endpoint, the table, the kind, the engine, the
// client and the outcome, and one span per step; the subject only when
// Trace.Subject is set; never a value of the statement.
func TestTraceQuery(t *testing.T) {
	for _, tt := range []struct {
		name, token, path, ct, body string
		subject                     bool
		want                        map[string]string // the query span's attributes
		steps                       []string
		failedStep                  string // the step whose outcome is want's
	}{
		{name: "select", token: "demo", path: "/query", ct: textPlain, body: "select Code, LastPrice from Security where Code = 'BHP' and Exchange = 'ASX'",
			want: map[string]string{"gatehouse.query.endpoint": "query", "gatehouse.query.table": "Security", "gatehouse.query.kind": "select",
				"gatehouse.query.engine": "sqlite", "gatehouse.client_id": "demo-app", "gatehouse.query.outcome": "ok", "gatehouse.query.rows": "1"},
			steps: []string{"gatehouse.query.parse", "gatehouse.query.authorize", "gatehouse.query.engine"}},
		{name: "select with the subject", token: "demo", path: "/query", ct: textPlain, body: "select Code from Security where Code = 'BHP'", subject: true,
			want:  map[string]string{"gatehouse.subject": querydb.DemoSubject, "gatehouse.client_id": "demo-app", "gatehouse.query.outcome": "ok"},
			steps: []string{"gatehouse.query.parse", "gatehouse.query.authorize", "gatehouse.query.engine"}},
		{name: "insert", token: "trader", path: "/query/Order/insert", ct: appJSON,
			body: `{"AccountId":"TRD-200001","Code":"WES","Exchange":"ASX","Side":"Buy","Quantity":25,"Price":72.1}`,
			want: map[string]string{"gatehouse.query.endpoint": "insert", "gatehouse.query.table": "Order", "gatehouse.query.kind": "insert",
				"gatehouse.query.outcome": "ok", "gatehouse.query.rows": "1"},
			steps: []string{"gatehouse.query.parse", "gatehouse.query.authorize", "gatehouse.query.engine"}},
		{name: "refused", token: "demo", path: "/query", ct: textPlain, body: "select * from Order where Code = 'BHP'",
			want:  map[string]string{"gatehouse.query.table": "Order", "gatehouse.query.kind": "select", "gatehouse.query.outcome": "forbidden"},
			steps: []string{"gatehouse.query.parse", "gatehouse.query.authorize"}, failedStep: "gatehouse.query.authorize"},
		{name: "syntax error", token: "demo", path: "/query", ct: textPlain, body: "select * form Security where Code = 'BHP'",
			want:  map[string]string{"gatehouse.query.table": "unknown", "gatehouse.query.outcome": "syntax_error"},
			steps: []string{"gatehouse.query.parse"}, failedStep: "gatehouse.query.parse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, rec := tracedService(t, func(c *queryproxy.Config) { c.Trace.Subject = tt.subject })
			s.do(t, tt.token, "POST", tt.path, tt.ct, tt.body)
			query, steps := querySpans(t, rec)
			got := attrs(query)
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (%v)", k, got[k], v, got)
				}
			}
			if _, ok := got["gatehouse.subject"]; ok != tt.subject {
				t.Errorf("gatehouse.subject present %t, want %t", ok, tt.subject)
			}
			if query.Status().Code == codes.Error {
				t.Errorf("a refusal or a success is the span's error: %v", query.Status())
			}
			if len(steps) != len(tt.steps) {
				t.Errorf("steps %v, want %v", keys(steps), tt.steps)
			}
			for i, name := range tt.steps {
				sp, ok := steps[name]
				if !ok {
					t.Fatalf("no %s span among %v", name, keys(steps))
				}
				if i > 0 && sp.StartTime().Before(steps[tt.steps[i-1]].EndTime()) {
					t.Errorf("%s starts before %s ends", name, tt.steps[i-1])
				}
				if name == tt.failedStep && attrs(sp)["gatehouse.query.outcome"] != tt.want["gatehouse.query.outcome"] {
					t.Errorf("%s: %v", name, attrs(sp))
				}
			}
			for _, sp := range rec.Ended() {
				for _, kv := range sp.Attributes() {
					if v := kv.Value.String(); strings.Contains(v, "BHP") || strings.Contains(v, "ASX") || strings.Contains(v, "TRD-200001") {
						t.Errorf("%s: %s = %q, a value of the statement", sp.Name(), kv.Key, v)
					}
				}
			}
		})
	}
}

// TestTraceFault: a fault of the engine's is the query span's error
// status, and the failing step's.
func TestTraceFault(t *testing.T) {
	var eng engine.Engine
	s, rec := tracedService(t, func(c *queryproxy.Config) { eng = c.Engine })
	s.do(t, "demo", "POST", "/query", textPlain, "select Code from Security")
	if _, steps := querySpans(t, rec); len(steps) != 3 {
		t.Fatalf("steps %v", keys(steps))
	}
	rec.Reset()
	_ = eng.Close()
	r := s.do(t, "demo", "POST", "/query", textPlain, "select Code from Security")
	if r.status < 500 || r.result.Error == nil {
		t.Fatalf("a closed engine answers %d %s", r.status, r.body)
	}
	query, steps := querySpans(t, rec)
	if query.Status().Code != codes.Error || attrs(query)["gatehouse.query.outcome"] != r.result.Error.Code {
		t.Errorf("query span: %v %v", query.Status(), attrs(query))
	}
	failed := 0
	for _, sp := range steps {
		if sp.Status().Code == codes.Error {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d of the steps %v failed, want one", failed, keys(steps))
	}
}

func keys(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
