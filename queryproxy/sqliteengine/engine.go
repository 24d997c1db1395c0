package sqliteengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// Defaults of Config.
const (
	DefaultMaxReadConns         = 4
	DefaultStatementTimeout     = 5 * time.Second
	DefaultBusyTimeout          = 5 * time.Second
	DefaultCatalogCheckInterval = time.Second
)

// Config configures an Engine. Zero values take the defaults named per field.
type Config struct {
	// Path is the database file. Required. It is created, with mode 0600 (and its
	// directory with 0700), if it does not exist.
	Path string

	// Init is an SQL script (several statements) that creates the schema and data of a
	// new database. Optional. It runs once, when the database holds no schema yet (a file
	// that did not exist, or an empty one), in one transaction taken before that check, so
	// a failing script leaves the database empty and two processes starting at once run
	// it once. It must not hold BEGIN, COMMIT or pragmas that cannot run in a
	// transaction. The demo creates its database from examples/querydb.
	Init string

	// MaxReadConns is how many read-only connections run queries at once. Default 4.
	// Writes use one connection of their own.
	MaxReadConns int

	// StatementTimeout is the time limit of one statement: of a Query with the reading
	// of its rows, of an Exec with its whole transaction. Default 5s. A statement past it
	// is interrupted and fails with engine.ErrTimeout.
	StatementTimeout time.Duration

	// BusyTimeout is how long a statement waits for a lock that another process holds
	// (a write by another program) before it fails with engine.ErrUnavailable.
	// Default 5s; rounded down to whole milliseconds, at least 1ms.
	BusyTimeout time.Duration

	// CatalogCheckInterval is how long Catalog serves its cached catalog before it asks
	// SQLite again whether the schema changed (one PRAGMA schema_version; the catalog is
	// read again only if it did). Default 1s. A schema change is seen at most this late.
	CatalogCheckInterval time.Duration

	// Trace, if set, is called with each statement Query and Exec run, and its
	// arguments, before it runs; not with the engine's own statements (the catalog, Init).
	// It is called from many goroutines at once. For tests; args must not be kept or
	// changed.
	Trace func(sql string, args []any)

	// Logger receives the engine's logs. Default: none.
	Logger *zap.Logger

	// Now is the clock of the catalog cache. Default time.Now.
	Now func() time.Time
}

// Engine is an engine.Engine over one SQLite database file. It is safe for concurrent
// use.
type Engine struct {
	cfg     Config
	path    string   // absolute
	w       *sql.DB  // the writer: one connection
	readers *readers // the read-only connections queries run on
	cat     *sql.DB  // a read-only connection the catalog is read on
	catalog engine.CatalogCache[int64]
	closed  atomic.Bool
}

// errClosed is wrapped by the errors of an Engine used after Close.
var errClosed = errors.New("sqlite engine is closed")

// Dialect is sqlgen.SQLite.
func (e *Engine) Dialect() sqlgen.Dialect { return sqlgen.SQLite }

// MaxConns is how many reads run at once (MaxReadConns): the query handler keeps any
// one user to a share of them (engine.Pooled).
func (e *Engine) MaxConns() int { return e.cfg.MaxReadConns }

// Query runs one read statement on a read-only connection, under the statement time
// limit, which ends when the Rows are closed. Writes fail.
func (e *Engine) Query(ctx context.Context, st sqlgen.Statement) (engine.Rows, error) {
	if e.closed.Load() {
		return nil, fmt.Errorf("running query: %w: %w", engine.ErrUnavailable, errClosed)
	}
	if e.cfg.Trace != nil {
		e.cfg.Trace(st.SQL, st.Args)
	}
	qctx, cancel := context.WithTimeout(ctx, e.cfg.StatementTimeout)
	deadline, _ := qctx.Deadline()
	args, err := namedArgs(withDeadline(st.Args, deadline))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("running query: %w", err)
	}
	r, err := e.readers.get(qctx)
	if err != nil {
		err = classify(ctx, qctx, err)
		cancel()
		return nil, fmt.Errorf("running query: %w", err)
	}
	dr, err := e.query(qctx, r, st.SQL, args)
	if err != nil {
		e.readers.put(r, isBroken(err))
		err = classify(ctx, qctx, err)
		cancel()
		return nil, fmt.Errorf("running query: %w", err)
	}
	rows, err := newRows(ctx, qctx, cancel, dr, st.Columns, func(broken bool) { e.readers.put(r, broken) })
	if err != nil {
		return nil, fmt.Errorf("running query: %w", err)
	}
	return rows, nil
}

// query runs query on r with args, preparing it there the first time.
func (e *Engine) query(ctx context.Context, r *reader, query string, args []driver.NamedValue) (driver.Rows, error) {
	stmt, err := r.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// Exec runs sts in one transaction on the writer connection, under the statement time
// limit, and returns the number of rows they affected. If one fails, the transaction is
// rolled back and none of them has any effect.
func (e *Engine) Exec(ctx context.Context, sts []sqlgen.Statement) (int64, error) {
	if e.closed.Load() {
		return 0, fmt.Errorf("running write: %w: %w", engine.ErrUnavailable, errClosed)
	}
	if len(sts) == 0 {
		return 0, nil
	}
	xctx, cancel := context.WithTimeout(ctx, e.cfg.StatementTimeout)
	defer cancel()
	n, err := e.exec(xctx, sts)
	if err != nil {
		return 0, fmt.Errorf("running write: %w", classify(ctx, xctx, err))
	}
	return n, nil
}

func (e *Engine) exec(ctx context.Context, sts []sqlgen.Statement) (n int64, err error) {
	tx, err := e.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock, at once
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	for i, st := range sts {
		if e.cfg.Trace != nil {
			e.cfg.Trace(st.SQL, st.Args)
		}
		res, err := tx.ExecContext(ctx, st.SQL, bindArgs(st.Args)...)
		if err != nil {
			return 0, fmt.Errorf("statement %d of %d: %w", i+1, len(sts), err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("statement %d of %d: %w", i+1, len(sts), err)
		}
		n += m
	}
	return n, tx.Commit()
}

// ignoreDone is err, or nil if err says the transaction had already ended (database/sql
// rolls a transaction back itself when its context ends).
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Close closes both connection pools. Queries and writes after Close fail with
// engine.ErrUnavailable.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	var errs []error
	if e.readers != nil {
		e.readers.close()
	}
	if e.cat != nil {
		errs = append(errs, e.cat.Close())
	}
	if e.w != nil {
		errs = append(errs, e.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing sqlite engine %q: %w", e.path, err)
	}
	return nil
}

var _ engine.Engine = (*Engine)(nil)

// Ping checks that the database answers a read (a reader, SELECT 1), for a readiness
// probe. With every reader open and in use it waits for none: the engine is serving.
func (e *Engine) Ping(ctx context.Context) error {
	if e.readers.busy() {
		return nil
	}
	r, err := e.readers.get(ctx)
	if err != nil {
		return err
	}
	q, ok := r.conn.(driver.QueryerContext)
	if !ok {
		e.readers.put(r, false)
		return nil
	}
	rows, err := q.QueryContext(ctx, "SELECT 1", nil)
	if err == nil {
		err = rows.Close()
	}
	e.readers.put(r, err != nil && isBroken(err))
	return err
}
