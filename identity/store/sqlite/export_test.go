package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/gatehouse/gatehouse/internal/sqlitefile"
)

// SchemaVersion is the schema version Open brings a database to.
var SchemaVersion = len(migrations)

// CreateAtVersion creates the database at path with the schema of version
// (its first version migrations applied, and recorded), as a program of
// that version left it, for the tests of the later migrations. The file
// must not exist yet.
func CreateAtVersion(ctx context.Context, path string, version int) error {
	if version < 1 || version > len(migrations) {
		return fmt.Errorf("no schema version %d", version)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := sqlitefile.Create(abs); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", dsn(abs, options{busyTimeout: DefaultBusyTimeout, synchronous: "full"}, false))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// As migrate creates it.
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return err
	}
	for i := range version {
		if err := applyMigration(ctx, db, i+1, migrations[i]); err != nil {
			return fmt.Errorf("migrating to version %d: %w", i+1, err)
		}
	}
	return db.Close()
}
