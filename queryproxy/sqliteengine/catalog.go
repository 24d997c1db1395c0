package sqliteengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// catalogSnapshot is a catalog and the PRAGMA schema_version it was read at.
type catalogSnapshot = engine.CatalogSnapshot[int64]

// Catalog reports the tables and columns of the database. It is served from a cache,
// which is checked against PRAGMA schema_version at most once per
// Config.CatalogCheckInterval, and read again only when the schema changed. The Catalog
// returned is shared: callers must not modify it. If a check fails, the catalog read last
// is served, and the next call checks again.
func (e *Engine) Catalog(ctx context.Context) (sqlgen.Catalog, error) { return e.catalog.Catalog(ctx) }

// logCatalog is the catalog cache's Log.
func (e *Engine) logCatalog(next *catalogSnapshot, err error) {
	if err != nil {
		e.cfg.Logger.Warn("query catalog check failed", zap.Error(err))
		return
	}
	e.cfg.Logger.Debug("query catalog read", zap.Int64("schema_version", next.Version), zap.Int("tables", len(next.Catalog.Tables)))
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

	next := &catalogSnapshot{Checked: e.cfg.Now()}
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&next.Version); err != nil {
		return nil, err
	}
	if prev != nil && prev.Version == next.Version {
		next.Catalog = prev.Catalog
		return next, nil
	}
	if next.Catalog, err = readTables(ctx, tx); err != nil {
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
