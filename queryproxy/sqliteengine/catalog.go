package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// catalogCache holds the last catalog read and the schema version it was read at.
type catalogCache struct {
	cur     atomic.Pointer[catalogSnapshot]
	refresh sync.Mutex // held by the one goroutine that checks the schema version
}

type catalogSnapshot struct {
	catalog sqlgen.Catalog
	version int64     // PRAGMA schema_version when read
	checked time.Time // when the version was last checked
}

// Catalog reports the tables and columns of the database. It is served from a cache,
// which is checked against PRAGMA schema_version at most once per
// Config.CatalogCheckInterval, and read again only when the schema changed. The Catalog
// returned is shared: callers must not modify it. If a check fails, the catalog read last
// is served, and the next call checks again.
func (e *Engine) Catalog(ctx context.Context) (sqlgen.Catalog, error) {
	if s := e.catalog.cur.Load(); s != nil && e.cfg.Now().Sub(s.checked) < e.cfg.CatalogCheckInterval {
		return s.catalog, nil
	}
	if e.closed.Load() {
		return sqlgen.Catalog{}, fmt.Errorf("reading catalog: %w: %w", queryproxy.ErrUnavailable, errClosed)
	}
	s := e.catalog.cur.Load()
	if s != nil {
		// One goroutine checks; the others keep using the catalog they have meanwhile.
		if !e.catalog.refresh.TryLock() {
			return s.catalog, nil
		}
	} else {
		e.catalog.refresh.Lock()
	}
	defer e.catalog.refresh.Unlock()
	// Another goroutine may have checked since s was loaded.
	s = e.catalog.cur.Load()
	if s != nil && e.cfg.Now().Sub(s.checked) < e.cfg.CatalogCheckInterval {
		return s.catalog, nil
	}
	qctx, cancel := context.WithTimeout(ctx, e.cfg.StatementTimeout)
	defer cancel()
	next, err := e.readCatalog(qctx, s)
	if err != nil {
		err = classify(ctx, qctx, err)
		if s == nil {
			return sqlgen.Catalog{}, fmt.Errorf("reading catalog: %w", err)
		}
		// The schema rarely changes: keep serving the catalog read last, and check again
		// at the next call.
		e.cfg.Logger.Warn("query catalog check failed", zap.Error(err))
		return s.catalog, nil
	}
	if s == nil || next.version != s.version {
		e.cfg.Logger.Debug("query catalog read", zap.Int64("schema_version", next.version),
			zap.Int("tables", len(next.catalog.Tables)))
	}
	e.catalog.cur.Store(next)
	return next.catalog, nil
}

// readCatalog checks the schema version and, if it is not that of prev (nil for none),
// reads the catalog; all in one read transaction, so the version is that of the schema
// read.
func (e *Engine) readCatalog(ctx context.Context, prev *catalogSnapshot) (_ *catalogSnapshot, err error) {
	tx, err := e.cat.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ignoreDone(tx.Rollback())) }()

	next := &catalogSnapshot{checked: e.cfg.Now()}
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&next.version); err != nil {
		return nil, err
	}
	if prev != nil && prev.version == next.version {
		next.catalog = prev.catalog
		return next, nil
	}
	if next.catalog, err = readTables(ctx, tx); err != nil {
		return nil, err
	}
	return next, nil
}

// readTables reads the tables of the schema, ordered by name, each with its columns in
// their order. SQLite's own tables (sqlite_*) and views are left out; so are the hidden
// columns of virtual tables (generated columns are listed).
func readTables(ctx context.Context, tx *sql.Tx) (sqlgen.Catalog, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		ORDER BY name`)
	if err != nil {
		return sqlgen.Catalog{}, err
	}
	var cat sqlgen.Catalog
	for rows.Next() {
		var t sqlgen.Table
		if err := rows.Scan(&t.Name); err != nil {
			rows.Close()
			return sqlgen.Catalog{}, err
		}
		cat.Tables = append(cat.Tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return sqlgen.Catalog{}, err
	}

	for i := range cat.Tables {
		t := &cat.Tables[i]
		if t.Columns, err = readColumns(ctx, tx, t.Name); err != nil {
			return sqlgen.Catalog{}, fmt.Errorf("table %q: %w", t.Name, err)
		}
	}
	return cat, nil
}

// readColumns reads the columns of one table.
func readColumns(ctx context.Context, tx *sql.Tx, table string) ([]sqlgen.Column, error) {
	// hidden: 0 a normal column, 1 hidden (of a virtual table), 2 and 3 generated.
	rows, err := tx.QueryContext(ctx, `SELECT name, type, hidden IN (2, 3) FROM pragma_table_xinfo(?)
		WHERE hidden <> 1 ORDER BY cid`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []sqlgen.Column
	for rows.Next() {
		var name, decl string
		var generated bool
		if err := rows.Scan(&name, &decl, &generated); err != nil {
			return nil, err
		}
		cols = append(cols, sqlgen.Column{Name: name, Type: columnType(decl), Num: columnNumeric(decl), Generated: generated})
	}
	return cols, rows.Err()
}
