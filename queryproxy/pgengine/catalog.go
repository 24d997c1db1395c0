package pgengine

import (
	"context"

	"go.uber.org/zap"

	"github.com/gatehouse/gatehouse/queryproxy/engine"
	"github.com/gatehouse/gatehouse/queryproxy/sqlgen"
)

// catalogSnapshot is a catalog and the digest (catalogDigest) it was read at.
type catalogSnapshot = engine.CatalogSnapshot[string]

// catalogColumns lists the columns of the schema's relations: tables, partitioned tables,
// views, materialized views and foreign tables (not the partitions of a partitioned
// table, which are read through it), each column with the OID of its type, a domain
// resolved to its base type (as PostgreSQL reports it in a result). Relations named like
// one of pg_catalog are left out: pg_catalog comes first on the engine's search path, so
// a statement naming them would read PostgreSQL's own.
const catalogColumns = `WITH RECURSIVE col AS (
	SELECT c.relname AS tbl, a.attnum AS num, a.attname AS name, a.atttypid AS typ, a.atttypmod AS mod,
		a.attgenerated <> '' OR a.attidentity = 'a' AS gen,
		NOT coalesce((SELECT co.collisdeterministic FROM pg_catalog.pg_collation co WHERE co.oid = a.attcollation), true) AS nd
	FROM pg_catalog.pg_class c
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
	WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
		AND a.attnum > 0 AND NOT a.attisdropped
		AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class s
			WHERE s.relnamespace = 'pg_catalog'::pg_catalog.regnamespace AND s.relname = c.relname)
), base AS (
	SELECT tbl, num, name, typ, mod, gen, nd FROM col
	UNION ALL
	SELECT b.tbl, b.num, b.name, t.typbasetype, CASE WHEN b.mod <> -1 THEN b.mod ELSE t.typtypmod END, b.gen, b.nd FROM base b
	JOIN pg_catalog.pg_type t ON t.oid = b.typ WHERE t.typtype = 'd'
), cat AS (
	SELECT b.tbl, b.num, b.name, b.typ, b.mod, b.gen, b.nd FROM base b
	JOIN pg_catalog.pg_type t ON t.oid = b.typ WHERE t.typtype <> 'd'
) `

// catalogQuery reads the catalog, ordered by table name (byte-wise) and column position.
const catalogQuery = catalogColumns + `SELECT tbl, name, typ, mod, gen, nd FROM cat ORDER BY tbl COLLATE "C", num`

// catalogDigest is a digest of what catalogQuery would read: one row, to check cheaply
// whether the catalog changed.
const catalogDigest = catalogColumns +
	`SELECT count(*) || ':' || coalesce(encode(sha256(convert_to(
		string_agg(format('%I.%I:%s:%s:%s:%s', tbl, name, typ, mod, gen, nd), ',' ORDER BY tbl COLLATE "C", num), 'UTF8')), 'hex'), '') FROM cat`

// Catalog reports the tables and columns of the schema. It is served from a cache, which
// is checked against the server's catalog digest at most once per
// Config.CatalogCheckInterval, and read again only when the digest changed. The Catalog
// returned is shared: callers must not modify it. If a check fails, the catalog read last
// is served, and the next call checks again.
func (e *Engine) Catalog(ctx context.Context) (sqlgen.Catalog, error) { return e.catalog.Catalog(ctx) }

// logCatalog is the catalog cache's Log.
func (e *Engine) logCatalog(next *catalogSnapshot, err error) {
	if err != nil {
		e.cfg.Logger.Warn("query catalog check failed", zap.Error(err))
		return
	}
	e.cfg.Logger.Debug("query catalog read", zap.String("schema", e.cfg.Schema), zap.Int("tables", len(next.Catalog.Tables)))
}

// readCatalog reads the digest and, if it is not that of prev (nil for none), the catalog.
// The digest is read first: should the schema change in between, the catalog stored is
// newer than its digest, and the next check reads it again.
func (e *Engine) readCatalog(ctx context.Context, prev *catalogSnapshot) (*catalogSnapshot, error) {
	next := &catalogSnapshot{Checked: e.cfg.Now()}
	if err := e.pool.QueryRow(ctx, catalogDigest, e.cfg.Schema).Scan(&next.Version); err != nil {
		return nil, err
	}
	if prev != nil && prev.Version == next.Version {
		next.Catalog = prev.Catalog
		return next, nil
	}
	rows, err := e.pool.Query(ctx, catalogQuery, e.cfg.Schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cat sqlgen.Catalog
	for rows.Next() {
		var table, column string
		var typ uint32
		var mod int32
		var gen, nd bool
		if err := rows.Scan(&table, &column, &typ, &mod, &gen, &nd); err != nil {
			return nil, err
		}
		if n := len(cat.Tables); n == 0 || cat.Tables[n-1].Name != table {
			cat.Tables = append(cat.Tables, sqlgen.Table{Name: table})
		}
		t := &cat.Tables[len(cat.Tables)-1]
		col := sqlgen.Column{Name: column, Type: columnType(typ), Num: columnNumeric(typ, mod), Generated: gen}
		if col.Type == sqlgen.String {
			col.Text = textKind(typ)
			col.Nondeterministic = nd
		}
		t.Columns = append(t.Columns, col)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	next.Catalog = cat
	return next, nil
}
