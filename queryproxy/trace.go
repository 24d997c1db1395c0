package queryproxy

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A query's trace, when its request is traced (Caddy's tracing directive):
// one span per query, a child of the request's, with one child span per
// step (parse, authorize, engine). Its attributes name the endpoint, the
// table (as the catalog spells it, or "unknown"), the statement's kind,
// the engine and its target, the client and, when TraceConfig.Subject
// says so, the subject; never the statement, a value or a token.
// docs/operations.md, "Traces", lists them.

// tracerName is the instrumentation scope of the query service's spans.
const tracerName = "github.com/gatehouse/gatehouse/queryproxy"

// The spans' names.
const (
	spanQuery     = "gatehouse.query"
	spanParse     = "gatehouse.query.parse"     // reading the body, parsing the statement
	spanAuthorize = "gatehouse.query.authorize" // the catalog, the table policy, the SQL generated
	spanEngine    = "gatehouse.query.engine"    // running it, streaming the rows
)

// The attributes' keys.
const (
	attrEndpoint = attribute.Key("gatehouse.query.endpoint") // query, select, insert
	attrTable    = attribute.Key("gatehouse.query.table")
	attrKind     = attribute.Key("gatehouse.query.kind") // select, insert, update, delete
	attrEngine   = attribute.Key("gatehouse.query.engine")
	attrTarget   = attribute.Key("gatehouse.query.target")
	attrOutcome  = attribute.Key("gatehouse.query.outcome") // ok, or the error code
	attrRows     = attribute.Key("gatehouse.query.rows")    // rows sent, or affected
	attrClient   = attribute.Key("gatehouse.client_id")
	attrSubject  = attribute.Key("gatehouse.subject")
)

// TraceConfig is what a query's span says of the engine and the caller,
// beyond the table and the statement's kind.
type TraceConfig struct {
	// Engine names the engine ("sqlite", "postgres", "iq"). Default the
	// engine's dialect, or "forwarder".
	Engine string
	// Target is what the engine talks to: the database file, the server
	// as user@host:port/database, the upstream's URL; never a DSN or a
	// password. Default none.
	Target string
	// Subject puts the caller's subject (the token's sub) on the span; the
	// client (client_id) is always there. Default false: a trace backend is
	// often kept longer, and read by more people, than the audit log.
	Subject bool
}

// traceAttrs are the attributes every query span of cfg starts with.
func traceAttrs(cfg Config) []attribute.KeyValue {
	name := cfg.Trace.Engine
	switch {
	case name != "":
	case cfg.Engine != nil:
		name = string(cfg.Engine.Dialect())
	default:
		name = "forwarder"
	}
	attrs := []attribute.KeyValue{attrEngine.String(name)}
	if cfg.Trace.Target != "" {
		attrs = append(attrs, attrTarget.String(cfg.Trace.Target))
	}
	return attrs
}

// startTrace starts the query's span when the request's own span records
// (Caddy's tracing directive is on and sampled the request). The tracer is
// that span's provider's (Caddy's tracing has a provider of its own, not
// the global one). A request not traced starts nothing and allocates
// nothing.
func (h *Handler) startTrace(r *http.Request, req *request) {
	parent := trace.SpanFromContext(r.Context())
	if !parent.IsRecording() {
		return
	}
	req.tracer = parent.TracerProvider().Tracer(tracerName)
	attrs := append([]attribute.KeyValue{attrEndpoint.String(req.endpoint)}, h.traceAttrs...)
	req.tctx, req.span = req.tracer.Start(r.Context(), spanQuery,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// traceCaller puts the caller on the query's span: the client, and the
// subject when configured.
func (h *Handler) traceCaller(req *request) {
	if req.span == nil {
		return
	}
	req.span.SetAttributes(attrClient.String(req.caller.ClientID))
	if h.cfg.Trace.Subject && req.caller.Subject != "" {
		req.span.SetAttributes(attrSubject.String(req.caller.Subject))
	}
}

// step ends the step under way, if any, and starts the next one's span.
func (req *request) step(name string) {
	if req.span == nil {
		return
	}
	req.endStep(nil)
	_, req.stepSpan = req.tracer.Start(req.tctx, name)
}

// endStep ends the step under way, if any; e, if not nil, is its failure
// (a fault of the service's or the engine's is the span's error status; a
// refusal of the caller's is only the outcome).
func (req *request) endStep(e *Error) {
	s := req.stepSpan
	if s == nil {
		return
	}
	req.stepSpan = nil
	if e != nil {
		s.SetAttributes(attrOutcome.String(e.Code))
		if e.Status >= 500 {
			s.SetStatus(codes.Error, e.Code)
		}
	}
	s.End()
}

// endTrace ends the query's span, and its step's, with the outcome.
func (req *request) endTrace() {
	if req.span == nil {
		return
	}
	req.endStep(nil)
	attrs := []attribute.KeyValue{attrTable.String(req.table), attrOutcome.String(req.outcome)}
	if req.kind != "" {
		attrs = append(attrs, attrKind.String(req.kind))
	}
	if req.rows >= 0 {
		attrs = append(attrs, attrRows.Int64(req.rows))
	}
	req.span.SetAttributes(attrs...)
	if req.failed {
		req.span.SetStatus(codes.Error, req.outcome)
	}
	req.span.End()
}
