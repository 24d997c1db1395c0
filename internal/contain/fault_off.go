//go:build !gatehouse_faults

package contain

// Point is where a test may inject a panic; in this build (without the
// gatehouse_faults tag) it does nothing, and the compiler removes it.
func Point(string) {}

// Faults reports whether this build can inject panics (Point): false.
const Faults = false
