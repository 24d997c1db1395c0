package pgengine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
)

// Open connects to the database cfg.DSN names, checks that cfg.Schema exists and reads its
// catalog. ctx bounds the opening only. The caller closes the Engine.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres engine: %w", err)
	}
	pc, err := poolConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres engine: %w", err)
	}
	cc := pc.ConnConfig
	e := &Engine{
		cfg:        cfg,
		server:     fmt.Sprintf("%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database),
		limitsSQL:  limitsQuery(cfg),
		beginWrite: pgx.TxOptions{BeginQuery: beginQuery("READ WRITE", cfg)},
	}
	e.catalog = engine.CatalogCache[string]{Interval: cfg.CatalogCheckInterval, Now: cfg.Now, Timeout: cfg.StatementTimeout,
		Read: e.readCatalog, Classify: classify, Closed: &e.closed, ErrClosed: errClosed, Log: e.logCatalog}
	if e.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("opening postgres engine %s: %w", e.server, err)
	}
	if err := e.open(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("opening postgres engine %s: %w", e.server, err)
	}
	cfg.Logger.Info("query database connected", zap.String("host", cc.Host), zap.Uint16("port", cc.Port),
		zap.String("database", cc.Database), zap.String("user", cc.User), zap.String("schema", cfg.Schema),
		zap.Int("max_conns", cfg.MaxConns))
	return e, nil
}

// withDefaults checks cfg and fills in its defaults.
func withDefaults(cfg Config) (Config, error) {
	if cfg.DSN == "" {
		return cfg, errors.New("no dsn")
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.StatementTimeout == 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	if cfg.Schema == "" {
		cfg.Schema = DefaultSchema
	}
	if cfg.CatalogCheckInterval == 0 {
		cfg.CatalogCheckInterval = DefaultCatalogCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.MaxConns < 0 || cfg.MaxConns > 1<<20:
		return cfg, fmt.Errorf("%d connections, want 1 to %d", cfg.MaxConns, 1<<20)
	case cfg.StatementTimeout < time.Millisecond:
		return cfg, fmt.Errorf("statement timeout %v is shorter than 1ms", cfg.StatementTimeout)
	case cfg.CatalogCheckInterval < 0:
		return cfg, fmt.Errorf("negative catalog check interval %v", cfg.CatalogCheckInterval)
	case strings.IndexByte(cfg.Schema, 0) >= 0:
		return cfg, errors.New("the schema name holds a NUL byte")
	}
	return cfg, nil
}

// errBadDSN replaces pgx's parse error, which quotes the connection string with its
// password masked on a best-effort basis only.
var errBadDSN = errors.New("the dsn is not a valid PostgreSQL connection string (not shown: it may hold a password)")

// poolConfig parses cfg.DSN and sets the pool up: its bound, and cancellation by a
// PostgreSQL cancel request when a statement's context ends.
func poolConfig(cfg Config) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, errBadDSN
	}
	cc := pc.ConnConfig
	if cc.DefaultQueryExecMode == pgx.QueryExecModeSimpleProtocol {
		return nil, errors.New("default_query_exec_mode=simple_protocol is not supported: values must be sent as bind parameters")
	}
	pc.MaxConns = int32(cfg.MaxConns)
	pc.MinConns = 0
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "gatehouse"
	}
	// pgx's default, when a context ends during a statement, is to close the connection
	// at once (and send the cancel request on the way out, in the background). Instead:
	// send the cancel request at once and wait, up to cancelGrace, for the server to
	// answer that the statement stopped; only then is the connection free (and kept). So
	// a connection of the pool is never counted free while its backend still runs a
	// statement, and the pool's bound holds on the server too.
	cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	return pc, nil
}

// beginQuery is the statement that opens each transaction of the engine: BEGIN with the
// access mode, then one SELECT that sets the statement time limit and the search path,
// both for this transaction only (set_config(..., true) is SET LOCAL). It is sent as one
// simple query (one round trip); the numbers and names in it come from the configuration,
// never from a request.
//
// Being a query, the SELECT also takes the transaction's first snapshot, after which
// PostgreSQL refuses to make a READ ONLY transaction read-write (SET TRANSACTION READ
// WRITE is allowed only before the first query).
//
// The search path is PostgreSQL's secure pattern: pg_catalog first, so that no function
// or operator of the schema can stand in for a built-in one, and pg_temp last, so that no
// temporary table can stand in for a table of the schema. (A table of the schema named
// like a relation of pg_catalog would be shadowed by it: the catalog leaves such tables
// out.)
func beginQuery(mode string, cfg Config) string {
	return "BEGIN " + mode + "; " + limitsQuery(cfg)
}

// limitsQuery is the SELECT of beginQuery: the statement time limit and the search path,
// for the transaction only.
func limitsQuery(cfg Config) string {
	ms := (cfg.StatementTimeout + time.Millisecond - 1) / time.Millisecond
	path := "pg_catalog, " + quoteIdent(cfg.Schema) + ", pg_temp"
	return "SELECT set_config('statement_timeout', '" + strconv.FormatInt(int64(ms), 10) + "', true)" +
		", set_config('search_path', " + quoteLiteral(path) + ", true)"
}

// quoteLiteral quotes text as an SQL string literal: in single quotes, an inner one
// doubled (standard_conforming_strings is on, as pgx requires: a backslash is itself).
func quoteLiteral(text string) string {
	return "'" + strings.ReplaceAll(text, "'", "''") + "'"
}

// quoteIdent quotes a name as an SQL identifier: in double quotes, an inner one doubled.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (e *Engine) open(ctx context.Context) error {
	var exists bool
	err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)`,
		e.cfg.Schema).Scan(&exists)
	if err != nil {
		return classify(ctx, ctx, err)
	}
	if !exists {
		return fmt.Errorf("schema %q does not exist", e.cfg.Schema)
	}
	_, err = e.Catalog(ctx)
	return err
}
