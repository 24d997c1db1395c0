//go:build !unix

package sqlite_test

import "time"

// cpuTime is unknown on this platform: benchmarks report no CPU figure.
func cpuTime() time.Duration { return 0 }
