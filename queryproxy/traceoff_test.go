package queryproxy

import (
	"context"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestUntracedQueryAllocatesNothing: a request that is not traced (no
// span: Caddy's tracing directive is off; or a span that does not record:
// the sampler left the request out) costs the query's trace nothing, not
// an allocation. It failed when startTrace went on without its
// IsRecording check (the no-op tracer's Start makes a context).
func TestUntracedQueryAllocatesNothing(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	unsampled, span := tp.Tracer("caddy").Start(context.Background(), "request")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("the unsampled span records")
	}
	h := &Handler{cfg: Config{Trace: TraceConfig{Subject: true}}, traceAttrs: traceAttrs(Config{Trace: TraceConfig{Engine: "sqlite"}})}
	for name, ctx := range map[string]context.Context{
		"no span":     context.Background(),
		"not sampled": unsampled,
		"no-op":       trace.ContextWithSpan(context.Background(), trace.SpanFromContext(context.Background())),
	} {
		r := httptest.NewRequest("POST", "/query", nil).WithContext(ctx)
		req := &request{endpoint: "query", table: "Security", caller: &Caller{Subject: "s", ClientID: "c"}, rows: -1}
		allocs := testing.AllocsPerRun(100, func() {
			h.startTrace(r, req)
			h.traceCaller(req)
			req.step(spanParse)
			req.step(spanAuthorize)
			req.endStep(&Error{Status: 500, Code: CodeInternal})
			req.step(spanEngine)
			req.kind, req.outcome, req.rows = "select", "ok", 1
			req.endTrace()
		})
		if allocs != 0 || req.span != nil {
			t.Errorf("%s: %v allocations a request, span %v", name, allocs, req.span)
		}
	}
}
