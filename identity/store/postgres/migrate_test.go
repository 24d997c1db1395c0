package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatehouse/gatehouse/identity/store/postgres"
	"github.com/gatehouse/gatehouse/identity/store/postgres/pgtest"
	"github.com/gatehouse/gatehouse/identity/store/storetest"
)

// Openers is how many stores TestMigrateConcurrently opens at once.
const openers = 8

// TestMigrateConcurrently opens several stores at once on a fresh
// database, as instances starting together do: all of them open, one of
// them runs each migration (the others wait, then skip it), each
// migration is recorded once, the schema is there once, and every store
// works on it.
func TestMigrateConcurrently(t *testing.T) {
	ctx := storetest.Context(t)
	dsn := pgtest.FreshDatabase(t)
	core, logs := observer.New(zap.InfoLevel)
	stores := make([]*postgres.Store, openers)
	errs := make([]error, openers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(ctx, postgres.Config{DSN: dsn, MaxConns: 2, Logger: zap.New(core)})
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
		}
	}
	if t.Failed() {
		return
	}

	if n := logs.FilterMessage("migrated postgres store schema").Len(); n != postgres.SchemaVersion {
		t.Errorf("%d migrations run by %d stores, want %d", n, openers, postgres.SchemaVersion)
	}
	if n := logs.FilterMessage("postgres store opened").Len(); n != openers {
		t.Errorf("%d stores say they opened, want %d", n, openers)
	}
	t.Logf("%d of %d stores waited for the migration lock", logs.FilterMessage("waiting for another instance to migrate the postgres store schema").Len(), openers)

	conn := connect(ctx, t, dsn)
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, postgres.SchemaVersion)
	for i := range want {
		want[i] = i + 1
	}
	if fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("schema_migrations holds versions %v, want %v", versions, want)
	}
	tables := tableNames(ctx, t, conn)
	for _, name := range []string{"secrets", "signing_keys", "users", "refresh_families", "refresh_tokens",
		"family_access_tokens", "revocations", "family_revocations", "subject_revocations", "failure_counters",
		"schema_migrations"} {
		if tables[name] != 1 {
			t.Errorf("table %s exists %d times, want once", name, tables[name])
		}
	}
	for i, s := range stores {
		if _, err := s.Secret(ctx, "shared", func() ([]byte, error) { return []byte(fmt.Sprint(i)), nil }); err != nil {
			t.Errorf("store %d: Secret: %v", i, err)
		}
	}
}

// TestMigrateFailureRollsBack: a migration that fails half-way leaves
// nothing of itself behind, and is not recorded, so the next start tries
// it again; the stores on the schema before it keep working.
func TestMigrateFailureRollsBack(t *testing.T) {
	ctx := storetest.Context(t)
	dsn := pgtest.FreshDatabase(t)
	s := open(t, dsn)
	broken := []string{`CREATE TABLE later_table (x integer)`, `SELECT 1 / 0`}
	if _, err := postgres.MigrateWithExtra(ctx, s, broken); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("version %d", postgres.SchemaVersion+1)) {
		t.Fatalf("migrating with a broken migration: %v, want an error naming version %d", err, postgres.SchemaVersion+1)
	}
	conn := connect(ctx, t, dsn)
	if n := tableNames(ctx, t, conn)["later_table"]; n != 0 {
		t.Errorf("the failed migration's table exists")
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != postgres.SchemaVersion {
		t.Errorf("schema version %d after the failed migration, want %d", version, postgres.SchemaVersion)
	}

	fixed := []string{`CREATE TABLE later_table (x integer)`}
	if v, err := postgres.MigrateWithExtra(ctx, s, fixed); err != nil || v != postgres.SchemaVersion+1 {
		t.Fatalf("migrating with the fixed migration: version %d, %v; want %d", v, err, postgres.SchemaVersion+1)
	}
	if n := tableNames(ctx, t, conn)["later_table"]; n != 1 {
		t.Errorf("the fixed migration's table exists %d times, want once", n)
	}
}

// TestSchemaNewer: a program does not open a database that a newer one
// has migrated past its last version.
func TestSchemaNewer(t *testing.T) {
	ctx := storetest.Context(t)
	dsn := pgtest.FreshDatabase(t)
	open(t, dsn)
	if _, err := connect(ctx, t, dsn).Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())`,
		postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, postgres.Config{DSN: dsn})
	if err == nil {
		s.Close()
		t.Fatal("Open of a database of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "newer than this program") {
		t.Errorf("Open of a database of a newer schema: %v, want it to say the schema is newer", err)
	}
}

// connect opens a plain connection to the database dsn names, closed when
// t ends.
func connect(ctx context.Context, t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// tableNames counts the tables of each name in the database, in any schema
// but the system's.
func tableNames(ctx context.Context, t *testing.T, conn *pgx.Conn) map[string]int {
	t.Helper()
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables
		WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	counts := make(map[string]int)
	for _, n := range names {
		counts[n]++
	}
	return counts
}

// TestMigrateCounterKeys: a database of schema version 1, whose failure
// counters were keyed by text, keeps its counters when version 2 makes
// the keys bytes, and then takes keys that text refused.
func TestMigrateCounterKeys(t *testing.T) {
	dsn := pgtest.FreshDatabase(t)
	ctx := storetest.Context(t)
	old, err := postgres.OpenAtVersion(ctx, postgres.Config{DSN: dsn}, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, _, err := old.Admit(ctx, "user:alice", now, time.Minute, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Admit(ctx, "pair:alice\x00127.0.0.1", now, time.Minute, 5, time.Minute); err == nil {
		t.Fatal("a NUL in a text key: no error; the test cannot show what version 2 changes")
	}
	old.Close()
	s := open(t, dsn)
	if c, err := s.Counter(ctx, "user:alice"); err != nil || c.Count != 1 || !c.WindowStart.Equal(now) {
		t.Fatalf("the counter of version 1 after the migration: %+v, %v", c, err)
	}
	if c, _, err := s.Admit(ctx, "pair:alice\x00127.0.0.1", now, time.Minute, 5, time.Minute); err != nil || c.Count != 1 {
		t.Fatalf("a key with a NUL after the migration: %+v, %v", c, err)
	}
}
