//go:build !unix

package marketdata

import "time"

// cpuTime is unknown on this platform: BenchmarkFanout reports no CPU
// figures.
func cpuTime() time.Duration { return 0 }
