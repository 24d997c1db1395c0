package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// db is the Store's connection pool: a pgxpool.Pool whose Exec, Query and
// QueryRow hand every outcome to health, so that each statement of the
// store says whether the database was reachable, and an unreachable one
// fails with an error matching store.ErrUnavailable. Transactions go
// through inTx, which does the same with the outcome of the whole.
type db struct {
	*pgxpool.Pool
	health *health
}

// Exec is pgxpool.Pool.Exec, its outcome checked.
func (d *db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := d.Pool.Exec(ctx, sql, args...)
	return tag, d.health.check(err)
}

// Query is pgxpool.Pool.Query, its outcome checked (and that of the rows'
// reading, through their Err).
func (d *db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := d.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, d.health.check(err)
	}
	return checkedRows{Rows: rows, health: d.health}, nil
}

// QueryRow is pgxpool.Pool.QueryRow, the outcome of its Scan checked.
func (d *db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return checkedRow{row: d.Pool.QueryRow(ctx, sql, args...), health: d.health}
}

type checkedRows struct {
	pgx.Rows
	health *health
}

func (r checkedRows) Err() error { return r.health.check(r.Rows.Err()) }

type checkedRow struct {
	row    pgx.Row
	health *health
}

func (r checkedRow) Scan(dest ...any) error { return r.health.check(r.row.Scan(dest...)) }
