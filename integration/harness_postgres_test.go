package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// scriptTimeout bounds one run of scripts/test-postgres.sh (initdb and a
// start, or a stop).
const scriptTimeout = 3 * time.Minute

// cluster is a PostgreSQL cluster of one test's own, run with
// scripts/test-postgres.sh, which the test may stop and start again (a
// fault test must not stop the server the other tests share). The
// script picks a free port at each start.
type cluster struct {
	t   testing.TB
	dir string
	URL string // postgres://postgres@127.0.0.1:<port>/postgres?sslmode=disable
}

// startCluster starts a cluster in a new directory and stops and removes
// it when t ends. It skips t when GATEHOUSE_TEST_POSTGRES is unset: the
// test command then has not made sure PostgreSQL is installed.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	postgresServer(t)
	// Under /tmp itself: the cluster runs as the postgres user, which
	// cannot enter the test's own temporary directories.
	dir, err := os.MkdirTemp("", "gatehouse-pg-fault-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir}
	t.Cleanup(func() {
		c.script("stop")
		os.RemoveAll(dir)
	})
	c.Start()
	return c
}

// Start starts the cluster (again) and returns its URL, which names a new
// port.
func (c *cluster) Start() string {
	c.t.Helper()
	c.URL = strings.TrimSpace(c.script("start"))
	if _, err := url.Parse(c.URL); err != nil || !strings.HasPrefix(c.URL, "postgres://") {
		c.t.Fatalf("scripts/test-postgres.sh start printed %q, not a URL", c.URL)
	}
	return c.URL
}

// Stop stops the cluster (pg_ctl -m fast: sessions are ended, open
// transactions rolled back).
func (c *cluster) Stop() {
	c.t.Helper()
	c.script("stop")
}

// HostPort is the host:port of the cluster's URL.
func (c *cluster) HostPort() string {
	u, _ := url.Parse(c.URL)
	return u.Host
}

// script runs scripts/test-postgres.sh cmd on the cluster's directory and
// returns its standard output.
func (c *cluster) script(cmd string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	run := exec.CommandContext(ctx, filepath.Join(repoRoot, "scripts", "test-postgres.sh"), cmd, c.dir)
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		c.t.Fatalf("scripts/test-postgres.sh %s: %v\n%s", cmd, err, stderr.Bytes())
	}
	return string(out)
}
