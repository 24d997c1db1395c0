package pgengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Defaults of Config.
const (
	DefaultMaxConns             = 8
	DefaultStatementTimeout     = 5 * time.Second
	DefaultSchema               = "public"
	DefaultCatalogCheckInterval = 5 * time.Second
)

// cancelGrace is how long a statement whose context ended may take to stop after the
// engine sent PostgreSQL a cancel request, before the engine drops its connection
// instead; and how long a ROLLBACK may take after a statement failed.
const cancelGrace = 2 * time.Second

// Config configures an Engine. Zero values take the defaults named per field.
type Config struct {
	// DSN is the connection string, a URL (postgres://user:password@host:5432/db?
	// sslmode=verify-full) or key=value pairs, as pgx and libpq read them; PG* environment
	// variables and ~/.pgpass fill in what it leaves out. Required. It is never logged and
	// never part of an error: the engine names the server by host, port, database and user
	// only. default_query_exec_mode=simple_protocol is refused (values would be
	// interpolated into the SQL text instead of bound). pool_max_conns and pool_min_conns
	// are overridden (by MaxConns, and no idle minimum); the other pool_* parameters of
	// pgxpool apply.
	DSN string

	// MaxConns bounds the connections the engine holds open to the server: statements
	// beyond it wait for a free connection (under their time limit). Default 8.
	MaxConns int

	// StatementTimeout is the time limit of one statement: of a Query with the reading of
	// its rows, of an Exec with its whole transaction, waiting for a connection included.
	// Default 5s; at least 1ms. It is enforced twice: by the engine, which cancels the
	// statement on the server when the limit passes, and by the server, to which each
	// transaction says SET LOCAL statement_timeout. Past it a statement fails with
	// engine.ErrTimeout.
	StatementTimeout time.Duration

	// Schema is the schema whose tables and views the catalog lists, and in which
	// statements find them (each transaction sets search_path to pg_catalog, then it).
	// Default "public".
	Schema string

	// CatalogCheckInterval is how long Catalog serves its cached catalog before it asks
	// the server whether the schema changed (one row: a digest of the schema's columns and
	// types; the catalog is read again only if the digest changed). Default 5s. A schema
	// change is seen at most this late.
	CatalogCheckInterval time.Duration

	// Trace, if set, is called with each statement Query and Exec run, and its
	// arguments, before it runs; not with the engine's own statements (the catalog, BEGIN,
	// ROLLBACK). It is called from many goroutines at once. For tests; args must not be
	// kept or changed.
	Trace func(sql string, args []any)

	// Logger receives the engine's logs. Default: none.
	Logger *zap.Logger

	// Now is the clock of the catalog cache. Default time.Now.
	Now func() time.Time
}

// Engine is an engine.Engine over one PostgreSQL database, through a bounded pool of
// pgx connections. It is safe for concurrent use.
type Engine struct {
	cfg        Config
	server     string // user@host:port/database, for errors and logs
	pool       *pgxpool.Pool
	limitsSQL  string // the SELECT that sets a read's time limit and search path (read.go)
	beginWrite pgx.TxOptions
	catalog    engine.CatalogCache[string]
	closed     atomic.Bool
}

// errClosed is wrapped by the errors of an Engine used after Close.
var errClosed = errors.New("postgres engine is closed")

// errEndedTx is the error of a statement run through Query that ended the engine's
// read-only transaction (a COMMIT or ROLLBACK sent as the statement).
var errEndedTx = errors.New("the statement ended the read-only transaction")

// Dialect is sqlgen.PostgreSQL.
func (e *Engine) Dialect() sqlgen.Dialect { return sqlgen.PostgreSQL }

// Server names the database as user@host:port/database, as the engine's errors and
// logs do: never the DSN, nor a password.
func (e *Engine) Server() string { return e.server }

// MaxConns is the connections the engine holds open: the query handler keeps any one
// user to a share of them (engine.Pooled).
func (e *Engine) MaxConns() int { return e.cfg.MaxConns }

// Query runs one read statement in a read-only transaction, under the statement time
// limit, which ends when the Rows are closed. Writes fail. When ctx ends first, the
// statement is canceled on the server.
func (e *Engine) Query(ctx context.Context, st sqlgen.Statement) (engine.Rows, error) {
	if e.closed.Load() {
		return nil, fmt.Errorf("running query: %w: %w", engine.ErrUnavailable, errClosed)
	}
	if e.cfg.Trace != nil {
		e.cfg.Trace(st.SQL, st.Args)
	}
	qctx, cancel := context.WithTimeout(ctx, e.cfg.StatementTimeout)
	rd, err := e.startRead(qctx, st)
	// The schema changed since the statement was prepared on the connection (its
	// failure forgot it there): the next call reads the catalog again, and the read
	// runs again, on whichever connection comes, each of which may hold the old
	// statement too, so a migration under a running gateway costs no error.
	for i := 0; err != nil && staleStatement(err) && i <= e.cfg.MaxConns; i++ {
		e.catalog.MarkStale()
		e.cfg.Logger.Debug("query statement prepared again after a schema change")
		rd, err = e.startRead(qctx, st)
	}
	if err != nil {
		err = classify(ctx, qctx, err)
		cancel()
		return nil, fmt.Errorf("running query: %w", err)
	}
	return newRows(ctx, qctx, cancel, rd.conn.Conn().TypeMap(), rd), nil
}

// Exec runs sts in one read-write transaction, under the statement time limit, and
// returns the number of rows they affected. If one fails, the transaction is rolled back
// and none of them has any effect.
func (e *Engine) Exec(ctx context.Context, sts []sqlgen.Statement) (int64, error) {
	if e.closed.Load() {
		return 0, fmt.Errorf("running write: %w: %w", engine.ErrUnavailable, errClosed)
	}
	if len(sts) == 0 {
		return 0, nil
	}
	xctx, cancel := context.WithTimeout(ctx, e.cfg.StatementTimeout)
	defer cancel()
	n, err := e.exec(ctx, xctx, sts)
	if err != nil {
		return 0, fmt.Errorf("running write: %w", classify(ctx, xctx, err))
	}
	return n, nil
}

func (e *Engine) exec(parent, ctx context.Context, sts []sqlgen.Statement) (n int64, err error) {
	tx, err := e.pool.BeginTx(ctx, e.beginWrite)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			rollback(parent, tx)
		}
	}()
	for i, st := range sts {
		if e.cfg.Trace != nil {
			e.cfg.Trace(st.SQL, st.Args)
		}
		// Query, not Exec: pgx's Exec sends a statement without arguments as a simple
		// query, which may hold several statements; Query always uses the extended
		// protocol, which takes exactly one.
		r, err := tx.Query(ctx, st.SQL, bindArgs(st.Args)...)
		if err != nil {
			return 0, fmt.Errorf("statement %d of %d: %w", i+1, len(sts), err)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("statement %d of %d: %w", i+1, len(sts), err)
		}
		n += r.CommandTag().RowsAffected()
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// rollback ends tx after a failure. It runs under a context of its own, bounded by
// cancelGrace, since the statement's context may have ended; if it fails, pgx closes the
// connection, and the pool opens another.
func rollback(parent context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cancelGrace)
	defer cancel()
	tx.Rollback(ctx)
}

// Close closes the connection pool. It waits for the Rows still open to be closed.
// Queries and writes after Close fail with engine.ErrUnavailable.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.pool != nil {
		e.pool.Close()
	}
	return nil
}

var _ engine.Engine = (*Engine)(nil)

// staleStatement reports whether err is PostgreSQL's refusal to run a prepared statement
// whose result's type the schema changed since ("cached plan must not change result
// type", SQLSTATE 0A000).
func staleStatement(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "0A000" && strings.Contains(pe.Message, "cached plan must not change result type")
}

// Ping checks that the server answers (a connection of the pool, a round trip), for a
// readiness probe. With every connection open and in use it waits for none: the
// engine is serving.
func (e *Engine) Ping(ctx context.Context) error {
	if e.closed.Load() {
		return errClosed
	}
	if st := e.pool.Stat(); st.IdleConns() == 0 && st.TotalConns() >= st.MaxConns() {
		return nil
	}
	return e.pool.Ping(ctx)
}
