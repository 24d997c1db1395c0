package queryproxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/iql"
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
	// Audit receives a record of every query, reads included (audit.go),
	// and says when queries are to be refused because the audit cannot
	// write (503 unavailable). nil records nothing.
	Audit Auditor
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
