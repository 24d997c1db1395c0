// Command querybench measures the query service (gatehouse_query) against
// a minimal net/http handler that queries the same SQLite database
// directly, in one run, and prints:
//
//   - point-select requests/s through gatehouse (in-process Caddy: token
//     check, policy, parse, sqlgen, the engine, the result writer) next to
//     the minimal handler's (the same parameterized SELECT through
//     database/sql, encoding/json), and the ratio (goal: at least 80%);
//   - the same point select through the query handler itself on a plain
//     table and on a venue table (the caller's venues filter its rows),
//     and the ratio (goal: at least 95%);
//   - a 1,000,000-row result streamed through gatehouse: the encode rate
//     in MB/s and the peak RSS while it streams (goal: under 100 MB) of a
//     process of its own that holds gatehouse and the reading client;
//   - parse + sqlgen ns/op of a typical statement;
//   - with -audit, the point select through gatehouse with the audit on
//     next to it off, and the ratio.
//
// Run it on demand, not in CI:
//
//	go run ./bench/querybench [-d 10s] [-c 8] [-rows 1000000] [-pg postgres://...] [-audit]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

// profile is the -cpuprofile file, or "".
var profile string

func main() {
	d := flag.Duration("d", 10*time.Second, "how long each request-rate figure is measured")
	c := flag.Int("c", 8, "concurrent HTTP clients, each with one keep-alive connection")
	rows := flag.Int("rows", 1_000_000, "rows of the streamed result")
	pg := flag.String("pg", os.Getenv("GATEHOUSE_TEST_POSTGRES"), "a PostgreSQL `dsn` (a database is created there and dropped) for the PostgreSQL figures; default $GATEHOUSE_TEST_POSTGRES; none: SQLite only")
	withAudit := flag.Bool("audit", false, "also measure the point select with the audit on against it off, in interleaved one-second slices (-d of each)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the gatehouse point-select phase to this `file`")
	flag.Parse()
	if *d <= 0 || *c <= 0 || *rows <= 0 {
		fmt.Fprintln(os.Stderr, "querybench: -d, -c and -rows must be positive")
		os.Exit(2)
	}
	profile = *cpuprofile
	if db := os.Getenv(streamEnv); db != "" {
		if err := streamChild(db, *rows); err != nil {
			fmt.Fprintln(os.Stderr, "querybench (streaming child):", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), *d, *c, *rows, *pg, *withAudit); err != nil {
		fmt.Fprintln(os.Stderr, "querybench:", err)
		os.Exit(1)
	}
}
