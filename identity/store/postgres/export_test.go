package postgres

import (
	"context"
	"slices"
)

// SchemaVersion is the schema version Open brings a database to.
var SchemaVersion = len(migrations)

// MigrateWithExtra runs the migrations with extra ones appended, as a
// later program would, and returns the version the database is at.
func MigrateWithExtra(ctx context.Context, s *Store, extra ...[]string) (int, error) {
	return s.migrate(ctx, append(slices.Clone(migrations), extra...))
}

// MaxConns is the size of the Store's pool.
func MaxConns(s *Store) int32 { return s.pool.Config().MaxConns }

// OpenAtVersion opens a store whose schema is brought to version n only,
// as an older program would.
func OpenAtVersion(ctx context.Context, cfg Config, n int) (*Store, error) {
	return open(ctx, cfg, migrations[:n])
}
