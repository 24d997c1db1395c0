package paired

import (
	"math"
	"testing"
)

// TestInterval: the geometric mean and its t interval, worked by hand for
// three ratios; fewer than three give none.
func TestInterval(t *testing.T) {
	if _, _, _, ok := Interval([]float64{1, 2}); ok {
		t.Error("an interval from two ratios")
	}
	mean, lo, hi, ok := Interval([]float64{1, 2, 4})
	// logs 0, ln2, 2ln2: mean ln2, sd ln2, half-width 4.303*ln2/sqrt(3).
	half := 4.303 * math.Ln2 / math.Sqrt(3)
	if !ok || math.Abs(mean-2) > 1e-9 || math.Abs(lo-math.Exp(math.Ln2-half)) > 1e-9 || math.Abs(hi-math.Exp(math.Ln2+half)) > 1e-9 {
		t.Errorf("Interval(1, 2, 4) = %v, %v, %v, %v", mean, lo, hi, ok)
	}
	if mean, lo, hi, _ := Interval([]float64{0.9, 0.9, 0.9}); math.Abs(mean-0.9) > 1e-12 || lo != hi {
		t.Errorf("equal ratios: %v (%v to %v)", mean, lo, hi)
	}
}
