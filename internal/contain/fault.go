//go:build gatehouse_faults

package contain

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Faults reports whether this build can inject panics (Point): true.
const Faults = true

// faultMarker is in every binary built with this file, and in no other: a
// test looks for it to prove the default build holds no hook.
const faultMarker = "gatehouse-fault-injection-armed"

// armed is how many more times each point panics, read once from
// GATEHOUSE_FAULTS: "point[=n],point[=n]" (n default 1; "*" for every
// time).
var (
	armOnce sync.Once
	armed   map[string]*atomic.Int64
)

func arm() {
	armed = map[string]*atomic.Int64{}
	for _, item := range strings.Split(os.Getenv("GATEHOUSE_FAULTS"), ",") {
		name, count, _ := strings.Cut(strings.TrimSpace(item), "=")
		if name == "" {
			continue
		}
		n := int64(1)
		switch {
		case count == "*":
			n = 1 << 62
		case count != "":
			if v, err := strconv.ParseInt(count, 10, 64); err == nil {
				n = v
			}
		}
		c := new(atomic.Int64)
		c.Store(n)
		armed[name] = c
	}
}

// Point panics when the point called name is armed and has panics left.
func Point(name string) {
	armOnce.Do(arm)
	if c := armed[name]; c != nil && c.Add(-1) >= 0 {
		panic(faultMarker + ": " + name)
	}
}
