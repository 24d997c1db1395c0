package queryproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Handler is the query service's http.Handler. Safe for concurrent use.
type Handler struct {
	cfg      Config
	policy   *Policy
	log      *zap.Logger
	users    userLimiter
	rowCheck string // the engine's RowChecker function; "" for none
	// traceAttrs are the attributes every query span starts with (the
	// engine's name and target).
	traceAttrs []attribute.KeyValue
}

// New builds the handler cfg configures.
func New(cfg Config) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := NewPolicy(withVenues(cfg.Tables, cfg.Venues))
	if err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxRows == 0 {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.MaxConcurrentPerUser == 0 {
		cfg.MaxConcurrentPerUser = DefaultMaxConcurrentPerUser
	}
	if cfg.MaxUserShare == 0 {
		cfg.MaxUserShare = DefaultMaxUserShare
	}
	cfg.MaxConcurrentPerUser = perUserBound(cfg)
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Audit == nil {
		cfg.Audit = nopAuditor{}
	}
	h := &Handler{cfg: cfg, policy: p, log: cfg.Logger, users: userLimiter{max: cfg.MaxConcurrentPerUser, n: map[string]int{}},
		traceAttrs: traceAttrs(cfg)}
	if rc, ok := cfg.Engine.(engine.RowChecker); ok {
		h.rowCheck = rc.RowCheck()
	}
	return h, nil
}

// CheckCatalog checks the table policy against the engine's catalog.
func (h *Handler) CheckCatalog(ctx context.Context) error {
	var cat sqlgen.Catalog
	var err error
	if h.cfg.Forwarder != nil {
		cat, err = h.cfg.Forwarder.Catalog(ctx)
	} else {
		cat, err = h.cfg.Engine.Catalog(ctx)
	}
	if err != nil {
		return err
	}
	return h.policy.CheckCatalog(cat)
}

// request is one request's state, on its goroutine.
type request struct {
	id       string
	endpoint string // query, select, insert
	table    string // the metrics label
	caller   *Caller
	start    time.Time
	kind     string // the statement's: select, insert, update, delete; "" before it is parsed
	outcome  string // "ok" or the error code, once answered
	failed   bool   // the service's or the engine's fault (5xx), or a result cut short
	rows     int64  // the rows sent or affected; -1 when unknown
	status   int    // the HTTP status of a failure (fail); 0 until then
	audited  bool   // a query: routed, POST, a valid Request-Id (audit.go)
	venues   []string
	feed     string // a venue table's feed, and the venues of it the caller's filter allowed (planned)

	// The query's trace (trace.go); span is nil when the request is not
	// traced.
	span     trace.Span
	stepSpan trace.Span // the step under way, or nil
	tracer   trace.Tracer
	tctx     context.Context // span's context, the steps' parent
}

// ServeHTTP routes, answers CORS preflights before authentication, then
// authenticates and serves one endpoint. Every failure goes through fail.
//
// A panic while serving is contained: the request is answered 500
// internal_error when nothing was sent yet, else the result ends with
// internal_error in the ErrorTrailer; the process goes on.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{start: time.Now(), table: "unknown", rows: -1}
	defer req.endTrace()
	defer h.audit(req)
	contain.Serve(h.log, "query.http", w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveHTTP(w, r, req) }),
		func(w http.ResponseWriter, started bool) {
			if started {
				w.Header().Set(http.TrailerPrefix+ErrorTrailer, CodeInternal)
				req.failed, req.outcome = true, CodeInternal
				return
			}
			h.fail(w, req, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error",
				cause: errPanicked})
		})
}

// errPanicked is the cause, for the log, of a request that panicked.
var errPanicked = errors.New("the request panicked (contained)")

func (h *Handler) serveHTTP(w http.ResponseWriter, r *http.Request, req *request) {
	endpoint, table, ok := h.route(r.URL.Path)
	req.endpoint = endpoint
	h.cors(w, r)
	rid, ridOK := requestID(r.Header.Values("Request-Id"))
	req.id = rid
	w.Header().Set("Request-Id", rid)
	switch {
	case !ok:
		h.fail(w, req, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint"})
		return
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", "POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", "POST, OPTIONS")
		h.fail(w, req, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed, Message: "use POST"})
		return
	case !ridOK:
		h.fail(w, req, errInvalid(fmt.Sprintf("Request-Id must be one header of 1 to %d visible ASCII characters", MaxRequestIDBytes)))
		return
	}
	req.audited = true
	if h.cfg.Audit.Refusing() {
		h.fail(w, req, &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
			Message: "the audit cannot write: try again later"})
		return
	}
	h.startTrace(r, req)
	caller, ok := h.cfg.Authenticate(w, r)
	if !ok {
		req.status = http.StatusUnauthorized
		h.done(req, CodeUnauthorized)
		return
	}
	req.caller = caller
	h.traceCaller(req)
	user := caller.Subject
	if user == "" {
		user = "client:" + caller.ClientID
	}
	if !h.users.acquire(user) {
		h.fail(w, req, &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests,
			Message: fmt.Sprintf("at most %d queries at once per user", h.cfg.MaxConcurrentPerUser)})
		return
	}
	defer h.users.release(user)

	contain.Point("query.request")
	req.step(spanParse)
	stmt, e := h.parse(r, endpoint, table)
	if e != nil {
		h.fail(w, req, e)
		return
	}
	req.kind = kindOf(stmt)
	h.serve(w, r, req, stmt)
}

// done counts the request, answered with outcome ("ok" or an error
// code), and notes it for its span.
func (h *Handler) done(req *request, outcome string) {
	req.outcome = outcome
	h.cfg.Metrics.Request(req.table, req.endpoint, outcome, time.Since(req.start))
}

// kindOf is the kind of stmt, as the audit log and the span name it.
func kindOf(stmt iql.Statement) string {
	switch stmt.(type) {
	case *iql.Select:
		return "select"
	case *iql.Insert:
		return "insert"
	case *iql.Update:
		return "update"
	case *iql.Delete:
		return "delete"
	}
	return "unknown"
}

// route splits a path into its endpoint and, for the structured ones, the
// table. Segments match ignoring ASCII case (the upstream is ASP.NET).
func (h *Handler) route(path string) (endpoint, table string, ok bool) {
	if len(path) < len(h.cfg.Prefix) || !sqlgen.EqualFold(path[:len(h.cfg.Prefix)], h.cfg.Prefix) {
		return "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(path[len(h.cfg.Prefix):], "/"), "/")
	switch {
	case len(parts) == 1 && sqlgen.EqualFold(parts[0], "query"):
		return "query", "", true
	case len(parts) == 3 && sqlgen.EqualFold(parts[0], "query") && parts[1] != "":
		switch {
		case sqlgen.EqualFold(parts[2], "select"):
			return "select", parts[1], true
		case sqlgen.EqualFold(parts[2], "insert"):
			return "insert", parts[1], true
		}
	}
	return "", "", false
}

// perUserBound is the most requests one user runs at once: MaxConcurrentPerUser, and
// no more than MaxUserShare percent of the engine's pool (one at least).
func perUserBound(cfg Config) int {
	n := cfg.MaxConcurrentPerUser
	var p engine.Pooled
	switch {
	case cfg.Forwarder != nil:
		p, _ = cfg.Forwarder.(engine.Pooled)
	case cfg.Engine != nil:
		p, _ = cfg.Engine.(engine.Pooled)
	}
	if p != nil && p.MaxConns() > 0 {
		n = min(n, max(1, p.MaxConns()*cfg.MaxUserShare/100))
	}
	return n
}

// userLimiter bounds the requests each user runs at once. acquire checks
// and counts under one lock, so a burst cannot pass the bound.
type userLimiter struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

func (l *userLimiter) acquire(user string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[user] >= l.max {
		return false
	}
	l.n[user]++
	return true
}

func (l *userLimiter) release(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[user]--; l.n[user] <= 0 {
		delete(l.n, user)
	}
}
