package queryhandler

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/caddymodule"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is the query service (http.handlers.gatehouse_query):
// POST {prefix}/query (IQL text), POST {prefix}/query/{table}/select and
// POST {prefix}/query/{table}/insert (structured), each authorized per
// table by the caller's access token, run on the configured engine, and
// answered in one JSON result shape. Requests to other paths get 404 from
// the service. It needs the gatehouse app (its verifier).
type Handler struct {
	// EngineRaw is the engine guest module (gatehouse.query_engines.*),
	// {"engine": "sqlite", ...}. Default: the embedded SQLite engine with
	// its defaults.
	EngineRaw json.RawMessage `json:"engine,omitempty" caddy:"namespace=gatehouse.query_engines inline_key=engine"`

	// Prefix is the path the routes start with ("/api" serves
	// /api/query...). Default "" (/query...).
	Prefix string `json:"prefix,omitempty"`

	// Tables is the table policy: which scopes read and write each table,
	// its owner column, its hidden columns, its venue column. A table not
	// listed is invisible (404, as one that does not exist).
	Tables []queryproxy.TablePolicy `json:"tables,omitempty"`

	// Venues are the venues the deployment knows, as the backend spells
	// them (ASX, NZX): the venues of every table with a venue_column that
	// lists none of its own. A caller whose token holds every one of them
	// (for the table's feed) also sees the rows whose venue is NULL. Risk:
	// a list that leaves out a venue shows those rows to callers who do not
	// hold it. Default none (a venue table then needs its own list).
	Venues []string `json:"venues,omitempty"`

	// AllowedOrigins are the browser origins (scheme://host[:port]) that
	// may call the service; CORS preflights are answered before
	// authentication. "*" allows any. Default none.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`

	// MaxBodySize bounds a request body, in bytes. Default 1 MiB.
	MaxBodySize int64 `json:"max_body_size,omitempty"`

	// MaxRows bounds the rows of one result; a result over it fails
	// (result_too_large) and is never cut silently. Default 10000.
	MaxRows int `json:"max_rows,omitempty"`

	// MaxConcurrentPerUser bounds the requests one user runs at once; the
	// next gets 429. Default 4.
	MaxConcurrentPerUser int `json:"max_concurrent_per_user,omitempty"`

	// MaxUserShare is the most of the engine's connections (max_conns, or
	// the SQLite engine's max_read_conns) one user may hold at once, in
	// percent: the per-user bound is the lower of max_concurrent_per_user
	// and this share (one at least), so one user's slow or unread results
	// never hold the whole pool. Default 50: the other half is always free
	// for other users.
	MaxUserShare int `json:"max_user_share,omitempty"`

	// Readiness names this handler's check in the readiness probe
	// (gatehouse_health ready): a round trip to the engine's database (or
	// the iq engine's upstream). Default "query_engine" (query_engine_2 for
	// a second handler, and so on).
	Readiness string `json:"readiness,omitempty"`

	// ReadinessOptional reports the engine's check without making the
	// instance not ready when it fails.
	ReadinessOptional bool `json:"readiness_optional,omitempty"`

	// MaxStatementSize bounds an IQL statement, in bytes, and how much a
	// structured request's numbers may grow written out (its statement is
	// otherwise bounded by the body's size). Default 64 KiB.
	MaxStatementSize int `json:"max_statement_size,omitempty"`

	// MaxInList bounds the values of one IN list. Default 1000.
	MaxInList int `json:"max_in_list,omitempty"`

	// MaxCriteria bounds the predicates of a statement (structured
	// criteria included). Default 256.
	MaxCriteria int `json:"max_criteria,omitempty"`

	// MaxInsertRows bounds the rows of one insert. Default 1000.
	MaxInsertRows int `json:"max_insert_rows,omitempty"`

	// MaxNesting bounds the nesting of parentheses and NOTs. Default 32.
	MaxNesting int `json:"max_nesting,omitempty"`

	// Realm is the realm of the WWW-Authenticate challenges. Default
	// "gatehouse".
	Realm string `json:"realm,omitempty"`

	// TraceSubject puts the caller's subject (the token's sub, a user id)
	// on each query's span when Caddy's tracing directive traces the
	// request; the client (client_id) is always there. Default false:
	// traces are often kept longer, and read by more people, than the
	// audit log. Never a token nor a value of the statement either way
	// (docs/operations.md, "Traces").
	TraceSubject bool `json:"trace_subject,omitempty"`

	handler *queryproxy.Handler
	logger  *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.gatehouse_query",
		New: func() caddy.Module { return new(Handler) },
	}
}

func (h *Handler) config() queryproxy.Config {
	return queryproxy.Config{
		Tables: h.Tables, Venues: h.Venues, Prefix: h.Prefix, AllowedOrigins: h.AllowedOrigins,
		MaxBodyBytes: h.MaxBodySize, MaxRows: h.MaxRows, MaxConcurrentPerUser: h.MaxConcurrentPerUser,
		MaxUserShare: h.MaxUserShare, Trace: queryproxy.TraceConfig{Subject: h.TraceSubject},
		Limits: iql.Limits{MaxBytes: h.MaxStatementSize, MaxInList: h.MaxInList, MaxPredicates: h.MaxCriteria,
			MaxRows: h.MaxInsertRows, MaxDepth: h.MaxNesting},
	}
}

// Validate checks the configuration. It changes nothing.
func (h *Handler) Validate() error {
	cfg := h.config()
	cfg.Engine, cfg.Authenticate = nopEngine{}, func(http.ResponseWriter, *http.Request) (*queryproxy.Caller, bool) { return nil, false }
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("gatehouse_query: %w", err)
	}
	for _, n := range []int{h.MaxStatementSize, h.MaxInList, h.MaxCriteria, h.MaxInsertRows, h.MaxNesting} {
		if n < 0 {
			return errors.New("gatehouse_query: a negative limit")
		}
	}
	if !verify.QuoteSafe(h.Realm) {
		return fmt.Errorf("gatehouse_query: realm %q holds a quote, a backslash or a non-printable character", h.Realm)
	}
	return nil
}

// Provision opens the engine, checks the table policy against its
// catalog, and builds the service over the gatehouse app's verifier.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	appIface, err := ctx.AppIfConfigured("gatehouse")
	if err != nil {
		return fmt.Errorf("gatehouse_query needs the gatehouse app (the gatehouse global option): %w", err)
	}
	app := appIface.(*caddymodule.App)
	v := app.Verifier()
	if v == nil {
		return errors.New("gatehouse_query: the gatehouse app has no verifier")
	}
	if h.EngineRaw == nil {
		h.EngineRaw = json.RawMessage(`{"engine":"sqlite"}`)
	}
	mod, err := ctx.LoadModule(h, "EngineRaw")
	if err != nil {
		return fmt.Errorf("gatehouse_query: loading the engine: %w", err)
	}
	cfg := h.config()
	switch m := mod.(type) {
	case EngineModule:
		cfg.Engine = m.Engine()
	case ForwarderModule:
		cfg.Forwarder = m.Forwarder()
	default:
		return fmt.Errorf("gatehouse_query: module %T is not a query engine", mod)
	}
	if t, ok := mod.(tracedEngine); ok {
		cfg.Trace.Engine, cfg.Trace.Target = t.traceTarget()
	}
	if err := registerMetrics(ctx); err != nil {
		return err
	}
	cfg.Logger = h.logger
	if w := app.AuditWriter(); w != nil { // a nil *audit.Writer would be a non-nil Auditor
		cfg.Audit = w
	}
	cfg.Metrics = metrics{}
	req := verify.Requirement{Realm: h.Realm}
	cfg.Authenticate = func(w http.ResponseWriter, r *http.Request) (*queryproxy.Caller, bool) {
		id, refusal := v.Authorize(r, req)
		if refusal != nil {
			h.logger.Debug("query request refused", zap.String("reason", string(refusal.Reason)), zap.Int("status", refusal.Status))
			refusal.Write(w)
			return nil, false
		}
		token, _ := verify.BearerToken(r) // Authorize read it: well formed
		return &queryproxy.Caller{Subject: id.Subject, ClientID: id.ClientID, Scopes: id.Scopes, Token: token, Entitlements: id.Entitlements,
			Claim: func(name string) (string, bool) {
				s, ok := id.Claims()[name].(string)
				return s, ok
			}}, true
	}
	if h.handler, err = queryproxy.New(cfg); err != nil {
		return fmt.Errorf("gatehouse_query: %w", err)
	}
	if err := h.handler.CheckCatalog(ctx); err != nil {
		return fmt.Errorf("gatehouse_query: the table policy does not fit the database: %w", err)
	}
	var pinger engine.Pinger
	if cfg.Engine != nil {
		pinger, _ = cfg.Engine.(engine.Pinger)
	} else {
		pinger, _ = cfg.Forwarder.(engine.Pinger)
	}
	if pinger != nil {
		appIface.(*caddymodule.App).AddReadinessCheck(cmp.Or(h.Readiness, "query_engine"), !h.ReadinessOptional, pinger.Ping)
	}
	return nil
}

// ServeHTTP serves the service's routes and passes every other request
// on to the next handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if !h.ours(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	h.handler.ServeHTTP(w, r)
	return nil
}

// ours reports whether path is under {prefix}/query, in any case.
func (h *Handler) ours(path string) bool {
	p := h.Prefix + "/query"
	if len(path) < len(p) || !sqlgen.EqualFold(path[:len(p)], p) {
		return false
	}
	return len(path) == len(p) || path[len(p)] == '/'
}

// tracedEngine is an engine module that names itself and its target in
// the query spans (queryproxy.TraceConfig): never a DSN or a password.
type tracedEngine interface {
	traceTarget() (engine, target string)
}

// nopEngine stands in for the engine in Validate, which builds nothing.
type nopEngine struct{ engine.Engine }

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
