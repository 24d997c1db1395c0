package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the environment variable holding the URL of the test
// server's maintenance database, e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. Its user
// must be allowed to create databases.
const EnvVar = "GATEHOUSE_TEST_POSTGRES"

// ServerDSN returns the DSN in EnvVar, or skips t when it is not set.
func ServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		t.Skipf("%s is not set: this test needs a PostgreSQL server (./test.sh starts one; "+
			"or: d=$(mktemp -d); export %s=$(scripts/test-postgres.sh start $d))", EnvVar, EnvVar)
	}
	return dsn
}

// FreshDatabase creates a new, empty database with a random name on the
// test server (skipping t when there is none, see ServerDSN), drops it
// when t ends (after the cleanups registered later, such as closing the
// stores on it), and returns its DSN.
func FreshDatabase(t testing.TB) string {
	t.Helper()
	server := ServerDSN(t)
	var b [8]byte
	rand.Read(b[:])
	name := "gatehouse_test_" + hex.EncodeToString(b[:])
	// The name is quoted as an identifier, never spliced in as text.
	quoted := pgx.Identifier{name}.Sanitize()
	exec(t, server, `CREATE DATABASE `+quoted)
	t.Cleanup(func() { exec(t, server, `DROP DATABASE IF EXISTS `+quoted+` WITH (FORCE)`) })
	return WithDatabase(t, server, name)
}

// WithDatabase is dsn with its database replaced by name.
func WithDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "'"
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s does not parse as a URL", EnvVar)
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

// exec runs one statement on the database dsn names, on a connection of
// its own.
func exec(t testing.TB, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test server (%s): %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// ServerDSNOrEmpty returns the DSN in EnvVar, "" when it is not set.
func ServerDSNOrEmpty() string { return os.Getenv(EnvVar) }
