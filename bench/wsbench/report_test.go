package main

import (
	"math"
	"testing"

	"github.com/gatehouse/gatehouse/bench/internal/paired"
)

// TestPairedInterval: the geometric mean of paired ratios and its 95%
// interval, against values computed by hand (Python's math, the t table);
// none for fewer than three rounds.
func TestPairedInterval(t *testing.T) {
	// Last session's eight rounds of b2c-256.
	mean, lo, hi, ok := paired.Interval([]float64{0.90, 0.98, 1.01, 0.96, 0.91, 1.10, 0.98, 0.96})
	near := func(got, want float64) bool { return math.Abs(got-want) < 5e-4 }
	if !ok || !near(mean, 0.97331) || !near(lo, 0.92364) || !near(hi, 1.02565) {
		t.Errorf("paired.Interval = %.5f [%.5f, %.5f] %v, want 0.97331 [0.92364, 1.02565]", mean, lo, hi, ok)
	}
	if mean, lo, hi, ok := paired.Interval([]float64{1.02, 1.02, 1.02}); !ok || !near(mean, 1.02) || !near(lo, 1.02) || !near(hi, 1.02) {
		t.Errorf("equal ratios: %.5f [%.5f, %.5f] %v", mean, lo, hi, ok)
	}
	if _, _, _, ok := paired.Interval([]float64{1, 1}); ok {
		t.Error("an interval from two rounds")
	}
}
