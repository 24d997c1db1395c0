package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/bench/internal/auditlog"
)

// auditLogger is the logger the audit's chain goes to (docs/audit.md).
const auditLogger = "gatehouse.audit.chain"

// auditLog is the file the audit's chain goes to while it is on: in the
// run's temporary directory.
func (g *gatehouse) auditLog() string { return filepath.Join(g.dir, "audit.log") }

// withAuditOn turns the audit on in cfg as docs/audit.md has it: an audit
// block in the gatehouse app, the chain's logger in a JSON file log of its
// own and out of the default log. The instance is named so that Caddy's
// instance id (kept in the user's data directory) is not needed.
func withAuditOn(cfg obj, file string) {
	cfg["apps"].(obj)["gatehouse"].(obj)["audit"] = obj{"instance": "querybench"}
	logs := cfg["logging"].(obj)["logs"].(obj)
	logs["default"].(obj)["exclude"] = []string{auditLogger}
	logs["audit"] = obj{
		"writer":  obj{"output": "file", "filename": file},
		"encoder": obj{"format": "json"},
		"include": []string{auditLogger},
	}
}

// auditFigure measures the point select through gatehouse with the audit
// off and on, in interleaved one-second slices (-d of each in all; Caddy
// reloads the configuration where the two change over), and prints the
// ratio of their rates and the audit log's records by kind, which show
// that it was on (one query record a request). It leaves the audit off.
func auditFigure(g *gatehouse, c int, d time.Duration, op func(*http.Client, int) error) error {
	on := false
	both, rounds, err := interleaved(c, d, [2]func(*http.Client, int) error{op, op}, func(k int) error {
		if want := k == 1; want != on {
			if err := g.load(want); err != nil {
				return fmt.Errorf("loading the config with the audit on=%v: %w", want, err)
			}
			on = want
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", []string{"off", "on"}[b2i(on)], err)
	}
	if on {
		if err := g.load(false); err != nil {
			return err
		}
	}
	fmt.Printf("%-36s %12s %10s %10s\n", fmt.Sprintf("point select, gatehouse (%d x 1s each)", rounds), "req/s", "p50", "p99")
	fmt.Printf("%-36s %12.0f %10v %10v\n", "audit off", both[0].rate(), both[0].p(0.5), both[0].p(0.99))
	fmt.Printf("%-36s %12.0f %10v %10v\n", "audit on (chain in a file)", both[1].rate(), both[1].p(0.5), both[1].p(0.99))
	fmt.Printf("ratio audit on / off: %.3f\n", both[1].rate()/both[0].rate())
	fmt.Printf("audit log: %s\n\n", auditlog.Kinds(g.auditLog()))
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// interleaved measures ops[0] and ops[1] in one-second slices taken in
// the order AB BA AB ... (-d of each in all, at least two), so that the
// load of a shared machine drifting within the run meets both alike.
// before, if not nil, runs before each slice with the index of the op.
func interleaved(c int, d time.Duration, ops [2]func(*http.Client, int) error, before func(k int) error) (both [2]result, rounds int, err error) {
	rounds = max(2, int(d/time.Second))
	for i := range rounds {
		for j := range 2 {
			k := j ^ i%2
			if before != nil {
				if err := before(k); err != nil {
					return both, rounds, err
				}
			}
			r, err := measure(c, time.Second, ops[k])
			if err != nil {
				return both, rounds, err
			}
			both[k].ops += r.ops
			both[k].elapsed += r.elapsed
			both[k].lat = append(both[k].lat, r.lat...)
		}
	}
	for k := range both {
		slices.Sort(both[k].lat)
	}
	return both, rounds, nil
}
