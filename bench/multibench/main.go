//go:build linux

// Command multibench measures Gatehouse as several instances on one
// PostgreSQL store, in one run:
//
//   - token-endpoint requests per second (client_credentials, which needs
//     no store, and refresh_token, which reads and rotates a family) on
//     one instance with SQLite, one with PostgreSQL, and two with
//     PostgreSQL behind a round-robin client;
//   - how long a revocation made on one instance takes to end a live
//     WebSocket session on the other (p50, p99): with PostgreSQL's
//     revocation notices, and with polling alone (revocation_notify off),
//     and on one instance for reference.
//
// It builds cmd/gatehouse, runs each deployment as processes (each with
// its own port, data directory and demo backend), and needs a PostgreSQL
// server whose user may create databases: -pg, by default
// $GATEHOUSE_TEST_POSTGRES (scripts/test-postgres.sh starts one). Each
// deployment gets a fresh database, dropped at the end. bench/README.md
// explains the figures. Run it on demand, not in CI:
//
//	go run ./bench/multibench [-d 10s] [-c 8] [-sessions 100]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	d := flag.Duration("d", 10*time.Second, "how long each throughput figure is measured")
	c := flag.Int("c", 8, "concurrent HTTP workers of the throughput figures")
	pg := flag.String("pg", os.Getenv("GATEHOUSE_TEST_POSTGRES"), "PostgreSQL `URL` whose user may create databases")
	sessions := flag.Int("sessions", 100, "sessions revoked per latency figure")
	spacing := flag.Duration("spacing", 100*time.Millisecond, "mean pause between two revocations")
	only := flag.String("only", "tokens,revocation", "parts to run, comma-separated: tokens, revocation")
	keep := flag.Bool("keep", false, "keep the temporary directory (Caddyfiles, logs)")
	flag.Parse()
	if *d <= 0 || *c <= 0 || *sessions <= 0 || *spacing <= 0 {
		fmt.Fprintln(os.Stderr, "multibench: -d, -c, -sessions and -spacing must be positive")
		os.Exit(2)
	}
	if *pg == "" {
		fmt.Fprintln(os.Stderr, "multibench: no PostgreSQL: set -pg or GATEHOUSE_TEST_POSTGRES "+
			"(d=$(mktemp -d); export GATEHOUSE_TEST_POSTGRES=$(scripts/test-postgres.sh start $d))")
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, options{d: *d, c: *c, pg: *pg, sessions: *sessions, spacing: *spacing, only: *only, keep: *keep})
	cancel()
	stopAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, "multibench:", err)
		os.Exit(1)
	}
}

type options struct {
	d        time.Duration
	c        int
	pg       string
	sessions int
	spacing  time.Duration
	only     string
	keep     bool
}

func (o options) runs(part string) bool {
	for p := range strings.SplitSeq(o.only, ",") {
		if strings.TrimSpace(p) == part {
			return true
		}
	}
	return false
}

func run(ctx context.Context, o options) (err error) {
	dir, err := os.MkdirTemp("", "multibench-")
	if err != nil {
		return err
	}
	defer func() {
		if o.keep || err != nil {
			fmt.Fprintln(os.Stderr, "multibench: logs and configurations kept in", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	progress("building cmd/gatehouse")
	bin := filepath.Join(dir, "gatehouse")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gatehouse")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/gatehouse (run multibench from the module root): %v\n%s", err, out)
	}
	version, err := serverVersion(ctx, o.pg)
	if err != nil {
		return err
	}
	fmt.Printf("multibench: %d CPUs (GOMAXPROCS %d), PostgreSQL %s; every process on this machine\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), version)
	c := newClient(4 * o.c)

	if o.runs("tokens") {
		var rows []tokenRow
		for _, dep := range []struct {
			name      string
			postgres  bool
			instances int
		}{{"sqlite-1", false, 1}, {"postgres-1", true, 1}, {"postgres-2", true, 2}} {
			st := store{postgres: dep.postgres, notify: true}
			if dep.postgres {
				dsn, drop, err := createDatabase(ctx, o.pg)
				if err != nil {
					return err
				}
				defer drop()
				st.dsn = dsn
			}
			progress("starting " + dep.name)
			d, err := startDeployment(dir, bin, dep.name, st, dep.instances)
			if err != nil {
				return err
			}
			for _, g := range []grant{grantClient, grantRefresh} {
				progress(fmt.Sprintf("%s: %s for %v", dep.name, g, o.d))
				f, err := measureTokens(ctx, c, d, g, o.c, o.d)
				if err != nil {
					d.stop()
					return fmt.Errorf("%s, %s: %w", dep.name, g, err)
				}
				rows = append(rows, tokenRow{store: st, instances: dep.instances, grant: g, figure: f})
				if ctx.Err() != nil {
					d.stop()
					return ctx.Err()
				}
			}
			d.stop()
		}
		if err := printTokens(o, rows); err != nil {
			return err
		}
	}

	if o.runs("revocation") {
		var rows []revocationRow
		for _, dep := range []struct {
			name      string
			notify    bool
			instances int
		}{{"notices", true, 2}, {"polling", false, 2}, {"reference", true, 1}} {
			dsn, drop, err := createDatabase(ctx, o.pg)
			if err != nil {
				return err
			}
			defer drop()
			st := store{postgres: true, dsn: dsn, notify: dep.notify}
			progress("starting " + dep.name)
			d, err := startDeployment(dir, bin, "revocation-"+dep.name, st, dep.instances)
			if err != nil {
				return err
			}
			progress(fmt.Sprintf("%s: %d sessions revoked", dep.name, o.sessions))
			lat, err := measureRevocations(ctx, c, d, dep.instances-1, o.sessions, o.spacing)
			d.stop()
			if err != nil {
				return fmt.Errorf("revocation, %s: %w", dep.name, err)
			}
			rows = append(rows, revocationRow{store: st, instances: dep.instances, latencies: lat})
		}
		printRevocations(o, rows)
	}
	return nil
}

// serverVersion is the PostgreSQL server's version, and where it is.
func serverVersion(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("postgres: connecting: %w", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", err
	}
	cfg := conn.Config()
	return fmt.Sprintf("%s at %s:%d", v, cfg.Host, cfg.Port), nil
}

// progress tells what is being measured, on stderr.
func progress(msg string) {
	fmt.Fprintf(os.Stderr, "multibench: %s\n", msg)
}
