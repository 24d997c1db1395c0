package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"

	"github.com/gatehouse/gatehouse/queryproxy/engine"

	"github.com/gatehouse/gatehouse/internal/sqlitefile"
)

// Open opens (and, if need be, creates and initializes with cfg.Init) the database at
// cfg.Path and reads its catalog. ctx bounds the opening only. The caller closes the
// Engine.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite engine: %w", err)
	}
	abs, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("opening sqlite engine %q: %w", cfg.Path, err)
	}
	e := &Engine{cfg: cfg, path: abs}
	e.catalog = engine.CatalogCache[int64]{Interval: cfg.CatalogCheckInterval, Now: cfg.Now, Timeout: cfg.StatementTimeout,
		Read: e.readCatalog, Classify: classify, Closed: &e.closed, ErrClosed: errClosed, Log: e.logCatalog}
	if err := e.open(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("opening sqlite engine %q: %w", cfg.Path, err)
	}
	return e, nil
}

// withDefaults checks cfg and fills in its defaults.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Path == "" {
		return cfg, errors.New("no database path")
	}
	if cfg.MaxReadConns == 0 {
		cfg.MaxReadConns = DefaultMaxReadConns
	}
	if cfg.StatementTimeout == 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = DefaultBusyTimeout
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
	case cfg.MaxReadConns < 0:
		return cfg, fmt.Errorf("%d read connections, want at least 1", cfg.MaxReadConns)
	case cfg.StatementTimeout < 0:
		return cfg, fmt.Errorf("negative statement timeout %v", cfg.StatementTimeout)
	case cfg.BusyTimeout < time.Millisecond:
		return cfg, fmt.Errorf("busy timeout %v is shorter than 1ms", cfg.BusyTimeout)
	case cfg.CatalogCheckInterval < 0:
		return cfg, fmt.Errorf("negative catalog check interval %v", cfg.CatalogCheckInterval)
	}
	return cfg, nil
}

func (e *Engine) open(ctx context.Context) error {
	if err := sqlitefile.Create(e.path); err != nil {
		return err
	}
	var err error
	if e.w, err = sql.Open("sqlite", writerDSN(e.path, e.cfg.BusyTimeout)); err != nil {
		return err
	}
	// One writer connection: the writes of this process queue for it in database/sql
	// instead of meeting SQLITE_BUSY inside SQLite.
	e.w.SetMaxOpenConns(1)
	e.w.SetMaxIdleConns(1)
	e.w.SetConnMaxLifetime(0)
	e.w.SetConnMaxIdleTime(0)
	if err := sqlitefile.ConnectWriter(ctx, e.w, e.cfg.BusyTimeout); err != nil {
		return err
	}
	if err := e.initialize(ctx); err != nil {
		return err
	}

	c, err := sqlite.NewConnector(readerDSN(e.path, e.cfg.BusyTimeout))
	if err != nil {
		return err
	}
	ro := readOnlyConnector{c}
	e.readers = newReaders(e.cfg.MaxReadConns, ro.Connect)
	// The catalog is read on a connection of its own, so that its checks never wait
	// behind the queries.
	e.cat = sql.OpenDB(ro)
	e.cat.SetMaxOpenConns(1)
	e.cat.SetMaxIdleConns(1)
	if _, err := e.Catalog(ctx); err != nil {
		return err
	}
	return nil
}

// initialize runs cfg.Init if the database holds no schema yet. The check and the script
// share one BEGIN IMMEDIATE transaction, so they see no other writer in between.
func (e *Engine) initialize(ctx context.Context) (err error) {
	if strings.TrimSpace(e.cfg.Init) == "" {
		return nil
	}
	tx, err := e.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	var objects int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return err
	}
	if objects > 0 {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, e.cfg.Init); err != nil {
		return fmt.Errorf("running the init script: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	e.cfg.Logger.Info("query database initialized", zap.String("path", e.path))
	return nil
}

// writerDSN is the driver's name for the writer connection of the database at the
// absolute path abs: WAL, BEGIN IMMEDIATE transactions, foreign keys enforced, and every
// commit synced to disk (an insert acknowledged to a client survives a power loss).
func writerDSN(abs string, busy time.Duration) string {
	return sqlitefile.WriterDSN(abs, busy, "FULL")
}

// readerDSN is the driver's name for a reader connection: opened read-only by SQLite
// itself (mode=ro: every write fails with SQLITE_READONLY, and a missing file is not
// created), and query_only besides.
func readerDSN(abs string, busy time.Duration) string {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_query_only", "1")
	return sqlitefile.URI(abs, q)
}
