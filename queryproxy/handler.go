package queryproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"

	"github.com/gatehouse/gatehouse/internal/contain"
)

// Defaults of Config.
const (
	// DefaultMaxBodyBytes bounds a request body: an IQL statement is
	// bounded further by iql's statement limit (64 KiB).
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxRows bounds the rows of one result.
	DefaultMaxRows = 10_000
	// DefaultMaxUserShare is the most of the engine's connections one user
	// holds, in percent.
	DefaultMaxUserShare = 50
	// DefaultMaxConcurrentPerUser bounds the queries one user runs at
	// once; the next gets 429.
	DefaultMaxConcurrentPerUser = 4
	// MaxRequestIDBytes bounds a client's Request-Id.
	MaxRequestIDBytes = 128
)

// Config configures a Handler. Zero fields take their defaults.
type Config struct {
	// Engine runs the statements as SQL. Exactly one of Engine and
	// Forwarder is required.
	Engine engine.Engine
	// Forwarder hands the statements on, as IQL, to the platform's own
	// query service (the iq engine).
	Forwarder engine.Forwarder
	// Tables is the table policy; tables it does not name are invisible.
	Tables []TablePolicy
	// Venues are the venues the deployment knows, as the backend spells
	// them: the Venues of every table with a venue column that names none
	// of its own (TablePolicy.Venues).
	Venues []string
	// Authenticate returns the request's caller, or answers the request
	// itself (401/403 with an RFC 6750 challenge) and returns false.
	// Required.
	Authenticate func(w http.ResponseWriter, r *http.Request) (*Caller, bool)
	// Prefix is the path the service's routes start with: Prefix+"/query",
	// Prefix+"/query/{table}/select", Prefix+"/query/{table}/insert".
	// Default "" (the routes at the root).
	Prefix string
	// AllowedOrigins are the browser origins (scheme://host[:port]) that
	// may call the service (CORS); "*" allows any. Default none.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxRows bounds the rows of one result; no result is ever cut
	// silently. Default DefaultMaxRows.
	MaxRows int
	// MaxConcurrentPerUser bounds the requests one user (token subject,
	// else client) runs at once. Default DefaultMaxConcurrentPerUser.
	MaxConcurrentPerUser int
	// MaxUserShare is the most of the engine's connections (engine.Pooled) one user
	// may hold at once, in percent: the per-user bound is the lower of
	// MaxConcurrentPerUser and this share of the pool (one at least), so
	// one user's unread or slow results never hold the whole pool. Default
	// DefaultMaxUserShare (half: the other half is always free for others).
	MaxUserShare int
	// Limits bound the language: statement length, nesting, IN-list
	// length, predicates (criteria), insert rows. Default iql's.
	Limits iql.Limits
	// ResultBufferSize is the part of a result held before it is sent
	// (ResultOptions.BufferSize). Default DefaultResultBufferSize.
	ResultBufferSize int
	// Metrics receives a count per request; nil discards.
	Metrics Metrics
	// Logger receives the audit log of writes and the service's faults;
	// never a statement, a value or a token. nil discards.
	Logger *zap.Logger
	// Trace says what a query's span holds, when its request is traced
	// (trace.go).
	Trace TraceConfig
}

// Metrics counts the service's requests. Table is a catalog table name,
// CatalogueTable, or "unknown"; endpoint is "query", "select" or
// "insert"; outcome "ok" or an error code.
type Metrics interface {
	Request(table, endpoint, outcome string, elapsed time.Duration)
}

type nopMetrics struct{}

func (nopMetrics) Request(string, string, string, time.Duration) {}

// Validate checks cfg without changing it.
func (cfg *Config) Validate() error {
	var errs []error
	if (cfg.Engine == nil) == (cfg.Forwarder == nil) {
		errs = append(errs, errors.New("exactly one of an engine and a forwarder is needed"))
	}
	if cfg.Authenticate == nil {
		errs = append(errs, errors.New("no authenticator"))
	}
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.HasSuffix(cfg.Prefix, "/")) {
		errs = append(errs, fmt.Errorf("prefix %q must start with / and not end with one", cfg.Prefix))
	}
	if cfg.MaxUserShare < 0 || cfg.MaxUserShare > 100 {
		errs = append(errs, fmt.Errorf("max_user_share %d: a percentage, 1 to 100", cfg.MaxUserShare))
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxRows < 0 || cfg.MaxConcurrentPerUser < 0 || cfg.ResultBufferSize < 0 {
		errs = append(errs, errors.New("a negative limit"))
	}
	for _, o := range cfg.AllowedOrigins {
		if o != "*" && (!strings.Contains(o, "://") || strings.HasSuffix(o, "/")) {
			errs = append(errs, fmt.Errorf("allowed origin %q is not scheme://host[:port]", o))
		}
	}
	errs = append(errs, validVenues("venues", cfg.Venues)...)
	if err := ValidatePolicy(withVenues(cfg.Tables, cfg.Venues)); err != nil {
		errs = append(errs, err)
	}
	if cfg.Forwarder != nil {
		for _, t := range cfg.Tables {
			// The upstream filters a user's rows itself, by the token
			// (forward): an owner here would be applied by nobody.
			if t.Owner != "" {
				errs = append(errs, fmt.Errorf("table %q: owner %q: the upstream of a forwarding engine filters rows by the caller's token itself; an owner column is applied only by the sqlite and postgres engines", t.Table, t.Owner))
			}
		}
	}
	return errors.Join(errs...)
}

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
	h.startTrace(r, req)
	caller, ok := h.cfg.Authenticate(w, r)
	if !ok {
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

// requestID is the client's Request-Id when it is one header of 1 to
// MaxRequestIDBytes visible ASCII characters (ok false otherwise), or a
// new one when there is none.
func requestID(values []string) (string, bool) {
	if len(values) == 0 {
		return newRequestID(), true
	}
	v := values[0]
	if len(values) != 1 || v == "" || len(v) > MaxRequestIDBytes {
		return newRequestID(), false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return newRequestID(), false
		}
	}
	return v, true
}

// A new request id is this process's random prefix and a count: unique
// across processes and restarts (the prefix is 64 random bits) without
// reading randomness per request. It names a request in logs; it is not a
// secret.
var (
	idPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	idCount atomic.Uint64
)

func newRequestID() string {
	const digits = "0123456789abcdef"
	var b [32]byte // 16 hex digits of prefix, 16 of count
	copy(b[:], idPrefix)
	for i, n := 31, idCount.Add(1); i >= 16; i, n = i-1, n>>4 {
		b[i] = digits[n&15]
	}
	return string(b[:])
}

// cors lets an allowed Origin read the response, and on a preflight
// (OPTIONS, answered before authentication) says which method and headers
// it may send. An origin not allowed gets no CORS header: the browser
// refuses.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	hdr := w.Header()
	hdr.Add("Vary", "Origin")
	if origin == "" || !h.originAllowed(origin) {
		return
	}
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Set("Access-Control-Expose-Headers", "Request-Id, WWW-Authenticate")
	if r.Method == http.MethodOptions {
		hdr.Set("Access-Control-Allow-Methods", "POST")
		hdr.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Request-Id")
		hdr.Set("Access-Control-Max-Age", "600")
	}
}

func (h *Handler) originAllowed(origin string) bool {
	for _, o := range h.cfg.AllowedOrigins {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}
