package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL the multi-instance tests share a store on: the throwaway
// server that ./test.sh starts (scripts/test-postgres.sh), whose URL is in
// GATEHOUSE_TEST_POSTGRES; each test gets a database of its own on it.

// postgresEnv names the variable with the test server's URL.
const postgresEnv = "GATEHOUSE_TEST_POSTGRES"

// dbTimeout bounds one statement on the test server.
const dbTimeout = time.Minute

// postgresServer returns the test server's URL, or skips t saying why.
func postgresServer(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: this test needs a PostgreSQL server (./test.sh starts one; "+
			"or: d=$(mktemp -d); export %s=$(scripts/test-postgres.sh start $d))", postgresEnv, postgresEnv)
	}
	return dsn
}

// freshDatabase creates an empty database with a random name on the test
// server, drops it when t ends (after the processes on it have stopped:
// cleanups registered later run first), and returns its URL.
func freshDatabase(t testing.TB) string {
	t.Helper()
	server := postgresServer(t)
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s is not a postgres:// URL", postgresEnv)
	}
	var b [8]byte
	rand.Read(b[:])
	name := "gatehouse_itest_" + hex.EncodeToString(b[:])
	quoted := pgx.Identifier{name}.Sanitize()
	execSQL(t, server, `CREATE DATABASE `+quoted)
	t.Cleanup(func() { execSQL(t, server, `DROP DATABASE IF EXISTS `+quoted+` WITH (FORCE)`) })
	u.Path = "/" + name
	return u.String()
}

// execSQL runs one statement on the database dsn names.
func execSQL(t testing.TB, dsn, stmt string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// startPair starts two gatehouse processes serving config on one store,
// whose DSN is dsn: A, then B with A's URL as its issuer too (so that each
// one's tokens are the other's), each with its own ports, admin address
// and data directory. Each one's log is checked for the other's secrets
// too.
func startPair(t *testing.T, config, dsn string) (a, b *Gatehouse) {
	t.Helper()
	env := []string{"GATEHOUSE_STORE_DSN=" + dsn}
	a = StartGatehouseWith(t, Options{Config: config, Env: env})
	b = StartGatehouseWith(t, Options{Config: config, Env: env, Issuer: a.Issuer})
	a.AlsoCheckSecretsOf(b)
	b.AlsoCheckSecretsOf(a)
	return a, b
}
